// The store contract against PostgreSQL: each test a fresh schema with one registered gate; the
// peer is a second connection as the same gate (a second process of it), so shared state and
// the one chain of a gate are both raced. The database's clock that rate windows count by
// (`clock_ms()`, ADR 060) reads a time the test sets, when it sets one.
import { after } from 'node:test';
import pg from 'pg';
import { storeContract } from '../contract/index.js';
import { dropSchema, freshSchema, PG_URL } from './pg.js';
import { initPostgresStore, openPostgresStore, type PostgresStore } from '../../../src/store/postgres/store.js';

const opened: PostgresStore[] = [];
const clients: pg.Client[] = [];
const schemas: string[] = [];
after(async () => {
  await Promise.all(opened.map((s) => s.end()));
  await Promise.all(clients.map((c) => c.end()));
  for (const s of schemas) await dropSchema(s);
});

/** The schema's clock made settable: the time in `test_clock` when there is one, else the database's. */
export async function settableClock(c: pg.Client, schema: string): Promise<(ms: number) => Promise<void>> {
  await c.query(`CREATE TABLE ${schema}.test_clock (ms BIGINT NOT NULL)`);
  await c.query(
    `CREATE OR REPLACE FUNCTION ${schema}.clock_ms() RETURNS BIGINT LANGUAGE sql VOLATILE
       AS $$ SELECT coalesce((SELECT ms FROM ${schema}.test_clock), floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint) $$`,
  );
  return async (ms: number) => {
    await c.query(`DELETE FROM ${schema}.test_clock`);
    await c.query(`INSERT INTO ${schema}.test_clock (ms) VALUES ($1)`, [ms]);
  };
}

if (PG_URL)
  storeContract('postgres', async () => {
    const schema = freshSchema();
    schemas.push(schema);
    await initPostgresStore({ url: PG_URL, schema, gateId: 'gate-a', publicKeyPem: 'test key' });
    const c = new pg.Client({ connectionString: PG_URL });
    await c.connect();
    clients.push(c);
    const clock = await settableClock(c, schema);
    // The contract is what the store holds, not how soon: a backlog of 516 requests recorded in one
    // transaction takes ~2 s on an idle 2-core machine and passed the default 5 s answer bound
    // under the whole suite's load. That bound has its own tests (bounds.test.ts).
    const open = async () => {
      const s = await openPostgresStore({ url: PG_URL, schema, gateId: 'gate-a', timeoutMs: 60_000 });
      opened.push(s);
      return s;
    };
    return { store: await open(), peer: open, clock };
  });
