// An error while working out what a call's reply does to the session label, when the call
// settles, fails closed: the session takes its highest label and the call's outcome is recorded
// as it came (its operation settled), the gate serving on. It was an unhandled rejection: the
// gate died after the reply, with no result entry, and the write's operation was left pending. The real binary in front of server-everything;
// the step made to fail by a preload (settle-fault-preload.ts) on a marker, also the canary.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pathToFileURL } from 'node:url';
import { cloakpipe, EVERYTHING, fixtureFiles, helperScript, PERMIT_ALL } from '../helpers/cli.js';
import { call, ledgerOf, startGate, summary } from '../helpers/gate.js';

const MARKER = 'SETTLE-CANARY-2f7a91';
const MANIFEST = `version: 1
release: settle-fault@1
labels: [public, internal, confidential]
tools:
  echo: { effect: write, accepts: confidential, arguments: { message: { type: string, max_len: 200, required: true } } }
  get-sum: { effect: read, accepts: public, arguments: { a: { type: number, required: true }, b: { type: number, required: true } } }
`;

test('a reply whose labelling throws at settling is recorded, the label at its highest, the gate serving on', { timeout: 120_000 }, async () => {
  const f = fixtureFiles('cloakpipe-settle-fault-', { manifest: MANIFEST, policy: PERMIT_ALL, context: { task: { id: 'T-settle-fault' } } });
  const g = await startGate({
    ...f,
    upstream: [process.execPath, EVERYTHING],
    env: { CLOAKPIPE_TEST_SETTLE_FAULT: MARKER },
    node: ['--import', pathToFileURL(helperScript('settle-fault-preload.js')).href],
  });
  let sink: string;
  try {
    assert.equal(summary(await call(g, 'echo', { message: 'plain' })), 'ok');
    await call(g, 'echo', { message: `quarterly ${MARKER}` }).catch(() => undefined); // the host may or may not get it
    const after = await call(g, 'get-sum', { a: 3, b: 4 });
    sink = after.ok ? 'ok' : after.reason;
  } finally {
    await g.close();
  }
  assert.equal(sink, 'sink_ceiling_exceeded');
  assert.ok(!/unhandled|RangeError/i.test(g.stderr()), 'the fault escaped');
  const ledger = ledgerOf(f.home);
  for (const where of [g.stderr(), JSON.stringify(ledger)]) assert.ok(!where.includes(MARKER), 'the reply is in a log or an entry');
  const echoes = ledger.filter((e) => e.kind === 'decision' && e.tool === 'echo').map((e) => e.seq);
  const results = ledger.filter((e) => e.kind === 'result' && echoes.includes(e.decision)).map((e) => [e.outcome, e.why ?? null]);
  assert.deepEqual(results, [['ok', null], ['ok', null]]); // the tool ran and answered: its outcome is known
  assert.deepEqual(ledger.filter((e) => e.kind === 'label').map((e) => [e.from, e.to, e.cause, e.tool ?? null]), [['public', 'confidential', 'fail_closed', 'echo']]);
  assert.ok(ledger.some((e) => e.kind === 'shutdown'), 'the gate ended by its shutdown, not by the fault');
  const ops = cloakpipe(['ops', 'list', '--home', f.home, '--json']).stdout.trim().split('\n').map((l) => JSON.parse(l) as { state: string });
  assert.deepEqual(ops.map((o) => o.state), ['succeeded', 'succeeded']);
});
