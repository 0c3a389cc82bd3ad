// The bound of a PostgreSQL store's transaction (fleet.md: "slow past a bound: every call is
// fail_closed"; ADR 016, ADR 060). A transaction that waits for a lock another connection holds,
// or runs a statement the database is slow to finish, rejects within the store's timeout; nothing
// of it is applied (it is rolled back, not left open to commit later); once the database answers
// again the same store goes on, without reopening. And the URL cannot lift the bound.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import pg from 'pg';
import { dropSchema, freshSchema, PG_URL, pgSkip } from './pg.js';
import { connectionConfig, initPostgresStore, openPostgresStore, type PostgresStore } from '../../../src/store/postgres/store.js';
import { storeTarget } from '../../../src/store/target.js';
import { StoreError } from '../../../src/store/ports.js';
import { Ledger } from '../../../src/ledger/ledger.js';
import { FileSigner } from '../../../src/keys/file.js';
import { Operations } from '../../../src/operations/operations.js';
import { freezingProxy } from '../../helpers/freezing-proxy.js';

const BOUND = 1000;
const FP = 'sha256:' + 'a'.repeat(64);
const cleanup: (() => Promise<void>)[] = [];
after(async () => {
  for (const f of cleanup.reverse()) await f();
});

/** A store on a fresh schema (reached through `via`, e.g. a freezing proxy), and a connection of the test's own. */
async function fresh(via = PG_URL): Promise<{ schema: string; store: PostgresStore; other: pg.Client; decide: (id: string) => Promise<unknown> }> {
  const schema = freshSchema();
  await initPostgresStore({ url: PG_URL, schema, gateId: 'gate-a', publicKeyPem: 'test key' });
  const store = await openPostgresStore({ url: via, schema, gateId: 'gate-a', timeoutMs: BOUND });
  const other = new pg.Client({ connectionString: PG_URL });
  await other.connect();
  cleanup.push(async () => {
    await store.end();
    await other.end();
    await dropSchema(schema);
  });
  const ledger = new Ledger(store.ledger, new FileSigner(generateKeyPairSync('ed25519').privateKey));
  const ops = new Operations(store.operations);
  // What a decision writes: its operation, a rate call, its entry (in this order).
  const decide = (id: string) =>
    store.transact(() => {
      ops.begin(id, FP, 'send_email', Date.now());
      store.rates.record('T-1', 'send_email', Date.now());
      return ledger.appendInTx({ kind: 'decision', outcome: 'allow', manifest_digest: 'sha256:0', policy_digest: 'sha256:0', op: id }).seq;
    });
  return { schema, store, other, decide };
}

async function rows(c: pg.Client, schema: string): Promise<{ ops: string[]; rates: number; entries: number }> {
  const ops = (await c.query(`SELECT id FROM ${schema}.operations ORDER BY id`)).rows.map((r) => r.id as string);
  const rates = Number((await c.query(`SELECT count(*) AS n FROM ${schema}.rate_calls`)).rows[0].n);
  const entries = Number((await c.query(`SELECT count(*) AS n FROM ${schema}.entries`)).rows[0].n);
  return { ops, rates, entries };
}

/** How long `p` took to reject, and with what. */
async function rejection(p: Promise<unknown>): Promise<{ ms: number; error: unknown }> {
  const t0 = Date.now();
  try {
    await p;
  } catch (error) {
    return { ms: Date.now() - t0, error };
  }
  assert.fail('the transaction was not refused');
}

test('postgres bound: a transaction waiting for a lock another connection holds rejects within the bound, is rolled back whole, and the store goes on', { ...pgSkip, timeout: 20_000 }, async () => {
  const { schema, store, other, decide } = await fresh();
  assert.equal(await decide('op-before'), 0);
  // Reads go on (EXCLUSIVE lets SELECT through), the entry's INSERT waits: the operation and the
  // rate call are already written in the transaction when it stops.
  await other.query('BEGIN');
  await other.query(`LOCK TABLE ${schema}.entries IN EXCLUSIVE MODE`);
  const slow = await rejection(decide('op-slow'));
  assert.ok(slow.error instanceof StoreError, String(slow.error));
  assert.match((slow.error as Error).message, /^store unavailable: /);
  assert.ok(slow.ms >= BOUND * 0.9, `refused after ${slow.ms} ms, before the bound (${BOUND} ms)`);
  // A second decision while the lock is still held: refused too, within the bound.
  const again = await rejection(decide('op-slow-2'));
  assert.deepEqual(await rows(other, schema), { ops: ['op-before'], rates: 1, entries: 1 }, 'nothing of the refused decisions, seen under the lock');
  await other.query('COMMIT');
  // Released: nothing of them commits later either (their transactions ended with their connection).
  await new Promise((r) => setTimeout(r, 300));
  assert.deepEqual(await rows(other, schema), { ops: ['op-before'], rates: 1, entries: 1 }, 'nothing of the refused decisions after the lock went');
  // The same store, not reopened: the refused operation id is free, the chain goes on.
  assert.equal(await decide('op-slow'), 1);
  assert.deepEqual(await rows(other, schema), { ops: ['op-before', 'op-slow'], rates: 2, entries: 2 });
});

test('postgres bound: a statement the database is slow to finish is cancelled at the bound, rolled back whole; the store goes on', { ...pgSkip, timeout: 20_000 }, async () => {
  const { schema, other, decide } = await fresh();
  assert.equal(await decide('op-before'), 0);
  // Every entry written from now takes 30 s: far past the bound.
  await other.query(`CREATE FUNCTION ${schema}.slow() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(30); RETURN NEW; END $$`);
  await other.query(`CREATE TRIGGER slow BEFORE INSERT ON ${schema}.entries FOR EACH ROW EXECUTE FUNCTION ${schema}.slow()`);
  const slow = await rejection(decide('op-slow'));
  assert.ok(slow.error instanceof StoreError, String(slow.error));
  assert.ok(slow.ms >= BOUND * 0.9, `refused after ${slow.ms} ms, before the bound (${BOUND} ms)`);
  await other.query(`DROP TRIGGER slow ON ${schema}.entries`);
  await new Promise((r) => setTimeout(r, 300));
  assert.deepEqual(await rows(other, schema), { ops: ['op-before'], rates: 1, entries: 1 }, 'nothing of the refused decision');
  assert.equal(await decide('op-slow'), 1);
});

test('postgres bound: a database that stops answering mid-transaction (no statement_timeout can fire) is given up on at the bound; nothing commits when it answers again', { ...pgSkip, timeout: 20_000 }, async () => {
  const proxy = await freezingProxy(PG_URL);
  cleanup.push(() => proxy.close());
  const { schema, other, decide } = await fresh(proxy.url);
  assert.equal(await decide('op-before'), 0);
  // The operation and the rate call reach the server; the entry's INSERT and all after it do not.
  proxy.freezeOn(`INSERT INTO "${schema}".entries`); // the schema as SQL writes it, quoted
  const slow = await rejection(decide('op-slow'));
  assert.equal(proxy.frozenTimes, 1);
  assert.ok(slow.error instanceof StoreError, String(slow.error));
  assert.ok(slow.ms >= BOUND * 0.9, `refused after ${slow.ms} ms, before the bound (${BOUND} ms)`);
  // Still frozen: the next decision cannot even connect, and is refused within the bound too.
  const down = await rejection(decide('op-down'));
  proxy.thaw(); // the held INSERT runs, then the server finds the connection gone: rollback
  await new Promise((r) => setTimeout(r, 500));
  assert.deepEqual(await rows(other, schema), { ops: ['op-before'], rates: 1, entries: 1 }, 'nothing of the refused decisions');
  assert.equal(await decide('op-slow'), 1);
});

test('postgres bound: a ROLLBACK the database leaves unanswered (retrying a conflict) is bounded too', { ...pgSkip, timeout: 20_000 }, async () => {
  const proxy = await freezingProxy(PG_URL);
  cleanup.push(() => proxy.close());
  const { schema, other, decide } = await fresh(proxy.url);
  assert.equal(await decide('op-before'), 0);
  // A serialization failure on the rate call's INSERT: the store rolls back to retry.
  await other.query(`CREATE FUNCTION ${schema}.conflict() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION USING ERRCODE = '40001'; END $$`);
  await other.query(`CREATE TRIGGER conflict BEFORE INSERT ON ${schema}.rate_calls FOR EACH ROW EXECUTE FUNCTION ${schema}.conflict()`);
  proxy.freezeOn('ROLLBACK');
  const slow = await rejection(decide('op-slow'));
  assert.equal(proxy.frozenTimes, 1, 'the store sent ROLLBACK');
  assert.ok(slow.error instanceof StoreError, String(slow.error));
  // The retry's connection, begun late in the bound, completes once the database answers: the
  // refused batch must not run on it.
  await other.query(`DROP TRIGGER conflict ON ${schema}.rate_calls`);
  proxy.thaw();
  await new Promise((r) => setTimeout(r, 500));
  assert.deepEqual(await rows(other, schema), { ops: ['op-before'], rates: 1, entries: 1 }, 'nothing of the refused decision, then or later');
  assert.equal(await decide('op-slow'), 1, 'the store goes on');
});

test('postgres bound: a store URL cannot lift the bounds or synchronous_commit; ?timeout= sets the bound', pgSkip, async () => {
  for (const p of ['statement_timeout=0', 'lock_timeout=0', 'idle_in_transaction_session_timeout=0', 'query_timeout=0', 'options=-c%20synchronous_commit%3Doff'])
    assert.throws(() => storeTarget(`postgres://u@h:5432/db?${p}`), (e: Error) => e instanceof StoreError && /must not set/.test(e.message), p);
  assert.deepEqual(storeTarget('postgres://u@h:5432/db?schema=s1&timeout=2s'), { kind: 'postgres', url: 'postgres://u@h:5432/db', schema: 's1', timeoutMs: 2000 });
  assert.deepEqual(storeTarget('postgres://u@h:5432/db'), { kind: 'postgres', url: 'postgres://u@h:5432/db' }, 'no timeout: the store default');
  for (const t of ['0s', '50ms', '61s', 'soon']) assert.throws(() => storeTarget(`postgres://u@h:5432/db?timeout=${t}`), /timeout/, t);
  // What reaches the server, even from a URL that carries them (a caller other than the CLI).
  const u = new URL(PG_URL);
  u.searchParams.set('statement_timeout', '0');
  u.searchParams.set('lock_timeout', '0');
  u.searchParams.set('options', '-c synchronous_commit=off');
  const c = new pg.Client(connectionConfig(u.toString(), 1500));
  await c.connect();
  try {
    const show = async (name: string) => (await c.query(`SHOW ${name}`)).rows[0][name];
    assert.equal(await show('statement_timeout'), '1500ms');
    assert.equal(await show('lock_timeout'), '1500ms');
    assert.equal(await show('synchronous_commit'), 'on');
  } finally {
    await c.end();
  }
});
