// Operations through the real gate binary, with the upstream's own record as the witness of
// how many times a side effect ran: a repeated write runs once and is answered from the store;
// a reused id for another call is a conflict; a crash (gate SIGKILLed, upstream dying, a
// timeout) leaves the operation unknown, refused until an operator reconciles it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cloakpipe } from '../helpers/cli.js';
import { openDb } from '../../src/store/sqlite/db.js';
import { call, ledger, records, setup, startGate, waitFor, type Outcome, type Setup } from '../helpers/recording-gate.js';

const CANARY = 'canary-ops-91b2';
const notes = (s: Setup) => records(s).filter((r) => r.tool === 'write_note');

function ops(s: Setup, args: string[]) {
  return cloakpipe(['ops', ...args, '--home', s.home]);
}

/** `ops show ID --json`, failing with the command's own stderr. */
function showOp(s: Setup, id: string): Record<string, unknown> {
  const r = ops(s, ['show', id, '--json']);
  assert.equal(r.status, 0, `ops show ${id}: status ${r.status} ${r.error ?? ''} ${r.stderr}`);
  return JSON.parse(r.stdout);
}

test('a write called twice with the same id runs once; the second answer is the stored result; a reused id conflicts', async () => {
  const s = setup();
  const g = await startGate(s);
  try {
    const args = { text: `buy milk ${CANARY}`, key: 'note-1' };
    const first = await call(g, 'write_note', args);
    assert.ok(first.ok, JSON.stringify(first));
    const second = await call(g, 'write_note', args);
    assert.ok(second.ok);
    assert.equal(second.ok && second.text, first.ok && first.text, 'the stored result, not a second run');
    assert.equal(notes(s).length, 1, 'the upstream ran the tool once');

    const conflict = await call(g, 'write_note', { text: 'something else', key: 'note-1' });
    assert.ok(!conflict.ok);
    assert.equal(conflict.reason, 'operation_conflict');
    assert.equal(notes(s).length, 1);

    // Without an id argument the operation id is _meta's, else the fingerprint, which names the
    // call only while it is unsettled: the same call after it settled is a new operation.
    const plain = { text: 'no key here' };
    assert.ok((await call(g, 'write_note', plain)).ok);
    assert.ok((await call(g, 'write_note', plain)).ok);
    assert.equal(notes(s).length, 3, 'same call, settled: it runs again');
    assert.ok((await call(g, 'write_note', plain, { 'cloakpipe/operation_id': 'm-1' })).ok);
    assert.ok((await call(g, 'write_note', plain, { 'cloakpipe/operation_id': 'm-1' })).ok);
    assert.equal(notes(s).length, 4, 'an explicit id in _meta names one effect for good: replayed');

    // A failed attempt (isError) may be retried: tested below with RECORDER_MODE=fail.
    const entries = ledger(s);
    const replay = entries.filter((e) => e.kind === 'decision' && e.outcome === 'replay');
    assert.equal(replay.length, 2);
    assert.match(String(replay[0].operation), /^sha256:[0-9a-f]{64}$/);
    const allow = entries.find((e) => e.kind === 'decision' && e.outcome === 'allow' && e.tool === 'write_note');
    assert.equal(allow?.operation_state, 'pending');
    assert.equal(allow?.operation, replay[0].operation);
    const conflictEntry = entries.find((e) => e.reason === 'operation_conflict');
    assert.equal(conflictEntry?.operation_state, 'succeeded', 'a refusal records the state it found');
    assert.ok(!JSON.stringify(entries).includes('note-1'), 'the operation id appears only as a digest');
    assert.ok(!JSON.stringify(entries).includes(CANARY));
    assert.ok(!g.stderr().includes(CANARY) && !g.stderr().includes('note-1'), 'nor in the diagnostics');

    const list = ops(s, ['list', '--json']);
    assert.equal(list.status, 0, list.stderr);
    const rows = list.stdout.trim().split('\n').map((l) => JSON.parse(l));
    assert.ok(rows.some((r) => r.id === 'note-1' && r.state === 'succeeded'));
    const show = ops(s, ['show', 'note-1', '--json']);
    assert.equal(show.status, 0);
    assert.equal(JSON.parse(show.stdout).state, 'succeeded');
    assert.equal(ops(s, ['show', 'nope']).status, 1);
  } finally {
    await g.close();
  }
});

test('a failed attempt is stored and the same call may run again', async () => {
  const s = setup();
  const g = await startGate(s, { mode: 'fail' });
  const args = { text: 'flaky', key: 'f-1' };
  const r = await call(g, 'write_note', args);
  assert.ok(r.ok && (r.result as { isError?: boolean }).isError);
  await g.close();
  assert.equal(showOp(s, 'f-1').state, 'failed');
  const g2 = await startGate(s);
  try {
    assert.ok((await call(g2, 'write_note', args)).ok);
    assert.equal(notes(s).length, 2);
    const o = showOp(s, 'f-1');
    assert.equal(o.state, 'succeeded');
    assert.equal(o.attempts, 2);
  } finally {
    await g2.close();
  }
});

test('crash: the gate is SIGKILLed mid-call → restart → reconcile_before_retry → ops reconcile not-executed → it runs', async () => {
  const s = setup();
  const args = { text: 'transfer', key: 'crash-1' };
  const g = await startGate(s, { mode: 'hang' });
  const inflight = call(g, 'write_note', args, undefined, 30_000);
  await waitFor(() => notes(s).length === 1);
  process.kill(g.pid, 'SIGKILL');
  const lost = await inflight.catch((e) => e);
  assert.ok(lost instanceof Error || (lost as { ok: boolean }).ok === false, 'the host never got an answer');
  await g.close();

  const g2 = await startGate(s);
  try {
    const retry = await call(g2, 'write_note', args);
    assert.ok(!retry.ok);
    assert.equal(retry.reason, 'reconcile_before_retry');
    assert.equal(notes(s).length, 1, 'not repeated');
    const unknown = ops(s, ['list', '--state', 'unknown', '--json']);
    assert.equal(JSON.parse(unknown.stdout.trim()).id, 'crash-1');
    assert.equal(JSON.parse(unknown.stdout.trim()).note, 'startup');

    const rec = ops(s, ['reconcile', 'crash-1', '--outcome', 'not-executed']);
    assert.equal(rec.status, 0, rec.stderr);
    const again = await call(g2, 'write_note', args);
    assert.ok(again.ok, JSON.stringify(again));
    assert.equal(notes(s).length, 2);
    // Reconciling what is not unknown is refused.
    assert.equal(ops(s, ['reconcile', 'crash-1', '--outcome', 'failed']).status, 1);

    const op = ledger(s).find((e) => e.kind === 'operator' && e.action === 'reconcile');
    assert.ok(op);
    assert.equal(op.outcome, 'not-executed');
    assert.equal(op.state_before, 'unknown');
    assert.match(String(op.operation), /^sha256:/);
    const startup = ledger(s).filter((e) => e.kind === 'startup');
    assert.equal(startup[startup.length - 1].operations_recovered, 1);
  } finally {
    await g2.close();
  }
});

test('crash: the upstream dies mid-call → outcome unknown → reconcile_before_retry → reconcile → it runs', async () => {
  const s = setup();
  const args = { text: 'charge card', key: 'die-1' };
  const g = await startGate(s, { mode: 'die' });
  const r = await call(g, 'write_note', args);
  assert.ok(!r.ok);
  assert.match(r.message, /outcome unknown \(upstream_exit\)/);
  await g.close();
  assert.equal(notes(s).length, 1);
  assert.equal(showOp(s, 'die-1').state, 'unknown');

  const g2 = await startGate(s);
  try {
    const retry = await call(g2, 'write_note', args);
    assert.ok(!retry.ok);
    assert.equal(retry.reason, 'reconcile_before_retry');
    assert.equal(ops(s, ['reconcile', 'die-1', '--outcome', 'not-executed']).status, 0);
    assert.ok((await call(g2, 'write_note', args)).ok);
    assert.equal(notes(s).length, 2);
  } finally {
    await g2.close();
  }
});

test('timeout: --call-timeout makes the outcome unknown; reconciled as succeeded, the stored result is replayed', async () => {
  const s = setup();
  const args = { text: 'slow thing', key: 'to-1' };
  const g = await startGate(s, { mode: 'hang', flags: ['--call-timeout', '500ms'] });
  try {
    const r = await call(g, 'write_note', args);
    assert.ok(!r.ok);
    assert.match(r.message, /outcome unknown \(timeout\)/);
    assert.equal(showOp(s, 'to-1').state, 'unknown');
    const retry = await call(g, 'write_note', args);
    assert.ok(!retry.ok);
    assert.equal(retry.reason, 'reconcile_before_retry');
    assert.equal(notes(s).length, 1);

    const resultFile = join(s.dir, 'result.json');
    writeFileSync(resultFile, JSON.stringify({ content: [{ type: 'text', text: 'done, checked by hand' }] }));
    const rec = ops(s, ['reconcile', 'to-1', '--outcome', 'succeeded', '--result', resultFile]);
    assert.equal(rec.status, 0, rec.stderr);
    const replay = await call(g, 'write_note', args);
    assert.ok(replay.ok);
    assert.equal(replay.ok && replay.text, 'done, checked by hand');
    assert.equal(notes(s).length, 1, 'the hung upstream is never asked again');
  } finally {
    await g.close();
  }
});

test('concurrency: two gates on one home, many concurrent calls with one operation id: the tool runs exactly once', async () => {
  const s = setup();
  // The upstream holds the one write until every other call is answered, so each gate sees the
  // operation in flight (its own or the other's) whatever the scheduler does.
  const releaseFile = join(s.dir, 'release');
  const held = { mode: 'held' as const, releaseFile };
  const [a, b] = await Promise.all([startGate(s, held), startGate(s, held)]);
  try {
    const args = { text: 'exactly once', key: 'race-1' };
    const answered: Outcome[] = [];
    const calls = Array.from({ length: 40 }, (_, i) => call(i % 2 ? a : b, 'write_note', args).then((r) => (answered.push(r), r)));
    await waitFor(() => answered.length === 39, 20_000, 'every call but the held one answered');
    writeFileSync(releaseFile, '');
    const results = await Promise.all(calls);
    assert.equal(notes(s).length, 1, 'the upstream ran the tool once');
    const ok = results.filter((r) => r.ok);
    assert.equal(ok.length, 1, 'the held call; every other call came while it was in flight');
    // Both gates saw the operation in flight (the other's or their own) and refused.
    assert.ok(results.some((r, i) => i % 2 === 1 && !r.ok) && results.some((r, i) => i % 2 === 0 && !r.ok));
    for (const r of results) {
      if (r.ok) assert.equal(r.text, (ok[0] as { text: string }).text, 'every success is the one result');
      else assert.equal(r.reason, 'reconcile_before_retry', JSON.stringify(r));
    }
    // After it settled, both gates replay it. The host's answer may come before the settlement
    // commits (ADR 017: it rides with the next group); until then the other gate rightly sees
    // the operation pending. So wait for the store to say it settled.
    const settled = () => {
      const db = openDb(join(s.home, 'operations.db'));
      try {
        return (db.prepare('SELECT state FROM operations').all() as { state: string }[]).every((r) => r.state === 'succeeded');
      } finally {
        db.close();
      }
    };
    await waitFor(settled);
    for (const g of [a, b]) {
      const r = await call(g, 'write_note', args);
      assert.ok(r.ok);
      assert.equal(r.ok && r.text, (ok[0] as { text: string }).text);
    }
    assert.equal(notes(s).length, 1);
  } finally {
    await Promise.all([a.close(), b.close()]);
  }
});

test('a store error refuses the call fail_closed and nothing reaches the tool', async () => {
  const s = setup();
  const g = await startGate(s);
  try {
    assert.ok((await call(g, 'read_note', { text: 'x' })).ok);
    const db = openDb(join(s.home, 'operations.db'));
    db.exec('DROP TABLE operations');
    db.close();
    const r = await call(g, 'write_note', { text: 'after the store broke', key: 'sf-1' });
    assert.ok(!r.ok);
    assert.equal(r.reason, 'fail_closed');
    assert.equal(notes(s).length, 0);
  } finally {
    await g.close();
  }
});
