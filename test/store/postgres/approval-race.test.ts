// A gate recording a call refused approval_required while an inbox approves that call, on one
// PostgreSQL store. The gate's decision reads the offered receipts (none yet), then locks the
// request by the call's fingerprint; the inbox holds that request locked, takes it and offers a
// receipt, and commits. The refusal is then stale: recording it put the approved call back in
// the inbox, waiting (19 of 20 approvals in test/e2e/inbox-stale-request.test.ts left such a
// copy). The race is made exact here: the inbox's transaction is held open until the gate is
// seen waiting for its lock.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { dropSchema, freshSchema, PG_URL, pgSkip } from './pg.js';
import { initPostgresStore, openPostgresStore, type PostgresStore } from '../../../src/store/postgres/store.js';
import type { ApprovalRequest } from '../../../src/store/ports.js';

const schemas: string[] = [];
const stores: PostgresStore[] = [];
after(async () => {
  await Promise.all(stores.map((s) => s.end()));
  for (const s of schemas) await dropSchema(s);
});

const FP = 'sha256:' + 'a'.repeat(64);
const request = (id: string): ApprovalRequest => ({
  id,
  fingerprint: FP,
  tool: 'send_email',
  call: '{"arguments":{"to":"ada@example.com"},"tool":"send_email"}',
  task: 'T-1',
  label: 'public',
  entry: 1,
  gate: 'gate-a',
  rule: '{}',
  created_at: new Date().toISOString(),
  expires_at: new Date(Date.now() + 3_600_000).toISOString(),
});

/** Until `cond` holds, bounded: a gate that never reaches the lock fails the test, never hangs it. */
async function until(cond: () => Promise<boolean>, what: string): Promise<void> {
  for (const end = Date.now() + 20_000; Date.now() < end; ) {
    if (await cond()) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  assert.fail(`timed out waiting for ${what}`);
}

test('an approval that commits while a gate decides the same call: the gate decides on its receipt, and records no request', pgSkip, async () => {
  const schema = freshSchema();
  schemas.push(schema);
  await initPostgresStore({ url: PG_URL, schema, gateId: 'gate-a', publicKeyPem: 'test key' });
  const gate = await openPostgresStore({ url: PG_URL, schema, gateId: 'gate-a', timeoutMs: 30_000 });
  stores.push(gate);
  // The first refusal, waiting for a person.
  await gate.transact(() => gate.approvalRequests.record(request('req-first')));

  const inbox = new pg.Client({ connectionString: PG_URL });
  await inbox.connect();
  try {
    // The inbox deciding it: the request locked, taken, a receipt offered; not committed yet.
    await inbox.query('BEGIN');
    await inbox.query(`SELECT * FROM ${schema}.approval_requests WHERE id = 'req-first' FOR UPDATE`);
    await inbox.query(`DELETE FROM ${schema}.approval_requests WHERE id = 'req-first'`);
    await inbox.query(`INSERT INTO ${schema}.offered_receipts (receipt_id, fingerprint, receipt, expires_at) VALUES ('rcpt-1', $1, '{}', $2)`, [
      FP,
      new Date(Date.now() + 3_600_000).toISOString(),
    ]);
    // The host's retry: refused for want of a receipt, it is recorded for the inbox.
    const decided = gate.transact(() => {
      const receipts = gate.approvalRequests.offered(FP);
      if (receipts.length > 0) return { allowedOn: receipts.map((r) => r.receipt_id) };
      gate.approvalRequests.record(request('req-retry'));
      return { allowedOn: [] };
    });
    // Watched from a connection of its own: inside the inbox's open transaction pg_stat_activity
    // is the snapshot its first read took.
    const watch = new pg.Client({ connectionString: PG_URL });
    await watch.connect();
    try {
      await until(
        async () => (await watch.query(`SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%approval_requests%FOR UPDATE%'`)).rowCount! > 0,
        'the gate to wait for the request the inbox holds',
      );
    } finally {
      await watch.end();
    }
    await inbox.query('COMMIT');
    assert.deepEqual(await decided, { allowedOn: ['rcpt-1'] }, 'the retry decided on the receipt the approval offered');
  } finally {
    await inbox.query('ROLLBACK').catch(() => undefined);
    await inbox.end();
  }
  const left = await gate.transact(() => gate.approvalRequests.pending(new Date().toISOString(), 10));
  assert.deepEqual(left, [], 'no request for the approved call is left waiting');
});
