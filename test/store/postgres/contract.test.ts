// The store contract against PostgreSQL: each test a fresh schema with one registered gate; the
// peer is a second connection as the same gate (a second process of it), so shared state and
// the one chain of a gate are both raced.
import { after } from 'node:test';
import { storeContract } from '../contract/index.js';
import { dropSchema, freshSchema, PG_URL } from './pg.js';
import { initPostgresStore, openPostgresStore, type PostgresStore } from '../../../src/store/postgres/store.js';

const opened: PostgresStore[] = [];
const schemas: string[] = [];
after(async () => {
  await Promise.all(opened.map((s) => s.end()));
  for (const s of schemas) await dropSchema(s);
});

if (PG_URL)
  storeContract('postgres', async () => {
    const schema = freshSchema();
    schemas.push(schema);
    await initPostgresStore({ url: PG_URL, schema, gateId: 'gate-a', publicKeyPem: 'test key' });
    const open = async () => {
      const s = await openPostgresStore({ url: PG_URL, schema, gateId: 'gate-a' });
      opened.push(s);
      return s;
    };
    return { store: await open(), peer: open };
  });
