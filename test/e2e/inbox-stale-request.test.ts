// A request for a call that is already approved. On a fleet's PostgreSQL store, the host's retry
// racing the approval can be refused approval_required by a gate whose read of the offered
// receipts came before the approval committed: it records the call again, and the page shows it
// waiting. Approved a second time, it got a second receipt and the call ran twice. Now deciding
// such a request signs and records nothing: it is closed, the answer names the receipt there is.
// SQLite (the request copied in as that race leaves it, deterministic) and the race itself on
// PostgreSQL, through the real binaries.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { cloakpipe, tempDir } from '../helpers/cli.js';
import { inboxClient, startInbox } from '../helpers/inbox-server.js';
import { call, ledger, records, setup, startGate } from '../helpers/recording-gate.js';
import { dropSchema, freshSchema, PG_URL, pgSkip } from '../store/postgres/pg.js';

const schemas: string[] = [];
after(async () => {
  for (const s of schemas) await dropSchema(s);
});

interface Listed {
  requests: { id: string; arguments: { to: string } }[];
}

test('a copy of an approved call\'s request: approve and deny decide nothing, the call runs once', async () => {
  const s = setup();
  const g = await startGate(s);
  const inbox = await startInbox({ home: s.home, approverKey: s.approverKey });
  try {
    const args = { to: 'stale-copy@example.com' };
    const refused = await call(g, 'send_email', args);
    assert.ok(!refused.ok && refused.reason === 'approval_required');
    const api = await inboxClient(inbox);
    const id = (JSON.parse((await api('/api/requests')).body) as Listed).requests.find((r) => r.arguments.to === args.to)!.id;
    const db = new Database(join(s.home, 'operations.db'));
    try {
      const row = db.prepare('SELECT * FROM approval_requests WHERE id = ?').get(id) as Record<string, unknown>;
      assert.equal((await api(`/api/requests/${id}/approve`, 'POST')).status, 200);
      // What the race leaves: the same call recorded again, under a new id, after the approval.
      const copy = () => {
        const again = { ...row, id: randomBytes(12).toString('base64url'), created_at: new Date().toISOString() };
        db.prepare(`INSERT INTO approval_requests (${Object.keys(again).join(', ')}) VALUES (${Object.keys(again).map((k) => `@${k}`).join(', ')})`).run(again);
        return again.id;
      };
      for (const action of ['approve', 'deny']) {
        const stale = copy();
        const d = await api(`/api/requests/${stale}/${action}`, 'POST');
        assert.equal(d.status, 410, `${action}: ${d.body}`);
        assert.match(d.body, /already approved \(receipt sha256:[0-9a-f]{64}, valid until /);
        assert.ok(!(JSON.parse((await api('/api/requests')).body) as Listed).requests.some((r) => r.id === stale), `${action}: the copy is closed`);
      }
      assert.equal((db.prepare('SELECT count(*) AS n FROM offered_receipts WHERE fingerprint = ?').get(row.fingerprint) as { n: number }).n, 1, 'one receipt');
    } finally {
      db.close();
    }
    const outcomes = [await call(g, 'send_email', args), await call(g, 'send_email', args), await call(g, 'send_email', args)];
    assert.equal(outcomes.filter((o) => o.ok).length, 1, JSON.stringify(outcomes));
    assert.equal(records(s).filter((r) => r.arguments.to === args.to).length, 1, 'the call ran once');
    assert.deepEqual(
      ledger(s).filter((e) => e.kind === 'operator').map((e) => e.action),
      ['approve'],
      'one operator entry: the approval',
    );
  } finally {
    await inbox.stop();
    await g.close();
  }
});

test('PostgreSQL: retries racing the approval on two gates; a request left waiting after it decides nothing, each call runs once', pgSkip, async () => {
  const schema = freshSchema();
  schemas.push(schema);
  const url = `${PG_URL}?schema=${schema}`;
  const s = setup();
  const home = (name: string) => {
    const h = join(tempDir('cloakpipe-inbox-stale-'), 'home');
    const r = cloakpipe(['init', '--home', h, '--store', url, '--gate-id', name]);
    assert.equal(r.status, 0, r.stderr);
    return h;
  };
  const gates = [await startGate({ ...s, home: home('gate-a') }, { flags: ['--store', url], delayMs: 0 }), await startGate({ ...s, home: home('gate-b') }, { flags: ['--store', url], delayMs: 0 })];
  const inbox = await startInbox({ home: home('inbox-1'), approverKey: s.approverKey, flags: ['--store', url] });
  try {
    const api = await inboxClient(inbox);
    let copies = 0;
    const sent: string[] = [];
    for (let k = 0; k < 20; k++) {
      const args = { to: `stale-${k}@example.com` };
      sent.push(args.to);
      await call(gates[0], 'send_email', args);
      const id = (JSON.parse((await api('/api/requests')).body) as Listed).requests.find((r) => r.arguments.to === args.to)!.id;
      const retries = [0, 1, 0, 1].map((i) => new Promise((r) => setTimeout(r, Math.random() * 30)).then(() => call(gates[i], 'send_email', args)));
      const [approved] = await Promise.all([api(`/api/requests/${id}/approve`, 'POST'), ...retries]);
      assert.equal(approved.status, 200, approved.body);
      for (const r of (JSON.parse((await api('/api/requests')).body) as Listed).requests.filter((x) => x.arguments.to === args.to)) {
        copies++;
        const again = await api(`/api/requests/${r.id}/approve`, 'POST');
        assert.equal(again.status, 410, `a second approval of an approved call: ${again.body}`);
      }
    }
    // Every call retried until its operation settles: none runs twice.
    for (const to of sent) for (let i = 0; i < 3; i++) await call(gates[i % 2], 'send_email', { to });
    const runs = new Map<string, number>();
    for (const r of records(s)) runs.set(String(r.arguments.to), (runs.get(String(r.arguments.to)) ?? 0) + 1);
    assert.deepEqual([...runs].filter(([, n]) => n > 1), [], 'no call ran twice');
    process.stderr.write(`# ${copies} of 20 approvals left a copy of the request waiting\n`);
  } finally {
    await inbox.stop();
    for (const g of gates) await g.close();
  }
});
