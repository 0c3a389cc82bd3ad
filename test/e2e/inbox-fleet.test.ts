// The approval inbox on a fleet's PostgreSQL store: a call refused by one gate is approved in an
// inbox that serves the shared store (its own gate id and chain), and the identical retry is
// allowed on another gate of the fleet, once; a denial is an operator entry in the inbox's chain.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import pg from 'pg';
import { cloakpipe, tempDir } from '../helpers/cli.js';
import { inboxClient, startInbox } from '../helpers/inbox-server.js';
import { call, records, setup, startGate } from '../helpers/recording-gate.js';
import { dropSchema, freshSchema, PG_URL, pgSkip } from '../store/postgres/pg.js';

const schemas: string[] = [];
after(async () => {
  for (const s of schemas) await dropSchema(s);
});

/** Until every operation in the fleet's store has settled (at most 10 s). */
async function settled(schema: string): Promise<void> {
  const c = new pg.Client({ connectionString: PG_URL });
  await c.connect();
  try {
    for (const until = Date.now() + 10_000; Date.now() < until; await new Promise((r) => setTimeout(r, 20))) {
      const rows = (await c.query(`SELECT state FROM ${schema}.operations`)).rows as { state: string }[];
      if (rows.length > 0 && rows.every((r) => r.state !== 'pending')) return;
    }
    throw new Error('the operation did not settle within 10 s');
  } finally {
    await c.end();
  }
}

function initGate(url: string, name: string): string {
  const home = join(tempDir('cloakpipe-inbox-fleet-'), 'home');
  const r = cloakpipe(['init', '--home', home, '--store', url, '--gate-id', name]);
  assert.equal(r.status, 0, r.stderr);
  return home;
}

test('approved in the inbox of a shared store, allowed once on another gate; denied, an entry in the inbox chain', pgSkip, async () => {
  const schema = freshSchema();
  schemas.push(schema);
  const url = `${PG_URL}?schema=${schema}`;
  const s = setup();
  const homeA = initGate(url, 'gate-a');
  const homeB = initGate(url, 'gate-b');
  const homeInbox = initGate(url, 'inbox-1');
  const a = await startGate({ ...s, home: homeA }, { flags: ['--store', url] });
  const b = await startGate({ ...s, home: homeB }, { flags: ['--store', url] });
  const inbox = await startInbox({ home: homeInbox, approverKey: s.approverKey, flags: ['--store', url] });
  try {
    const args = { to: 'fleet-inbox@example.com', body: 'shared' };
    const refused = await call(a, 'send_email', args);
    assert.ok(!refused.ok && refused.reason === 'approval_required');
    const api = await inboxClient(inbox);
    const listed = JSON.parse((await api('/api/requests')).body) as { requests: { id: string; gate: string; entry: number; arguments: { to: string } }[] };
    const r = listed.requests.find((x) => x.arguments.to === 'fleet-inbox@example.com');
    assert.ok(r, JSON.stringify(listed));
    assert.equal(r.gate, 'gate-a', "the refusal's entry is in gate-a's chain");
    assert.equal(r.entry, refused.data.entry);
    const approved = await api(`/api/requests/${r.id}/approve`, 'POST');
    assert.equal(approved.status, 200, approved.body);

    const ok = await call(b, 'send_email', args);
    assert.ok(ok.ok, `the retry on another gate is allowed: ${JSON.stringify(ok)}`);
    // The host's answer may come before gate-b's settlement commits (ADR 017/030: it rides with
    // the next transaction); until then gate-a rightly sees the operation pending
    // (reconcile_before_retry). Wait for the store to say it settled, then try the receipt again.
    await settled(schema);
    const again = await call(a, 'send_email', args);
    assert.ok(!again.ok);
    assert.equal(again.reason, 'approval_invalid');
    assert.match(again.detail, /^already_used/);
    assert.equal(records(s).filter((x) => x.arguments.to === 'fleet-inbox@example.com').length, 1, 'ran once in the fleet');

    const other = { to: 'fleet-deny@example.com' };
    assert.equal((await call(b, 'send_email', other)).ok, false);
    const pending = JSON.parse((await api('/api/requests')).body) as { requests: { id: string; gate: string; arguments: { to: string } }[] };
    const d = pending.requests.find((x) => x.arguments.to === 'fleet-deny@example.com')!;
    assert.equal(d.gate, 'gate-b');
    assert.equal((await api(`/api/requests/${d.id}/deny`, 'POST')).status, 200);
    assert.equal((await api(`/api/requests/${d.id}/approve`, 'POST')).status, 410, 'a decision is final');

    const c = new pg.Client({ connectionString: PG_URL });
    await c.connect();
    try {
      const rows = (await c.query(`SELECT gate_id, body FROM ${schema}.entries WHERE kind = 'operator' ORDER BY seq`)).rows as { gate_id: string; body: string }[];
      const actions = rows.map((x) => [x.gate_id, (JSON.parse(x.body) as { action: string }).action]);
      assert.deepEqual(actions, [['inbox-1', 'approve'], ['inbox-1', 'deny']]);
      const stored = (await c.query(`SELECT count(*)::int AS n FROM ${schema}.approval_requests`)).rows[0].n;
      assert.equal(stored, 0, 'decided requests are gone from the store');
      const all = (await c.query(`SELECT body FROM ${schema}.entries`)).rows.map((x) => x.body).join('\n');
      assert.ok(!all.includes('fleet-inbox@example.com') && !all.includes('fleet-deny@example.com'), 'no value in any chain');
    } finally {
      await c.end();
    }
    assert.ok(!inbox.stderr().includes('@example.com'));
  } finally {
    await inbox.stop();
    await a.close();
    await b.close();
  }
});
