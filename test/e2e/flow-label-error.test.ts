// An error while labelling what reaches the host fails closed: the session takes its highest
// label, as though the output held the most sensitive data there is, and the rise is recorded.
// It used to be swallowed (server output) or to end the gate (a call's reply), the label left
// where it was, so a public sink stayed open to what the host had just been shown. The real
// gate binary in front of server-everything; the classifier made to fail by a preload
// (classify-fault-preload.ts) on a marker, which is also the canary.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pathToFileURL } from 'node:url';
import { EVERYTHING, fixtureFiles, helperScript, PERMIT_ALL } from '../helpers/cli.js';
import { call, ledgerOf, startGate, summary, type RunningGate } from '../helpers/gate.js';

const MARKER = 'FAULT-CANARY-5c1e0b';
const MANIFEST = `version: 1
release: flow-label-error@1
labels: [public, internal, confidential]
tools:
  echo: { effect: read, accepts: confidential, arguments: { message: { type: string, max_len: 200, required: true } } }
  get-sum: { effect: read, accepts: public, arguments: { a: { type: number, required: true }, b: { type: number, required: true } } }
classify:
  - { label: internal, pattern: "ACCT-[0-9]{8}" }
`;

/** A gate whose classifier fails on MARKER; `step` shows the host something holding it. */
async function afterFault(step: (g: RunningGate) => Promise<void>) {
  const f = fixtureFiles('cloakpipe-label-error-', { manifest: MANIFEST, policy: PERMIT_ALL, context: { task: { id: 'T-label-error' } } });
  const g = await startGate({
    ...f,
    upstream: [process.execPath, EVERYTHING],
    env: { CLOAKPIPE_TEST_CLASSIFY_FAULT: MARKER },
    node: ['--import', pathToFileURL(helperScript('classify-fault-preload.js')).href],
  });
  let sink: string;
  try {
    assert.equal(summary(await call(g, 'get-sum', { a: 1, b: 2 })), 'ok'); // open before
    await step(g);
    const after = await call(g, 'get-sum', { a: 3, b: 4 });
    sink = after.ok ? 'ok' : after.reason;
  } finally {
    await g.close();
  }
  const ledger = ledgerOf(f.home);
  for (const where of [g.stderr(), JSON.stringify(ledger)]) assert.ok(!where.includes(MARKER), 'the output is in a log or an entry');
  return { sink, labels: ledger.filter((e) => e.kind === 'label').map((e) => [e.from, e.to, e.cause, e.tool ?? null]) };
}

test('a reply the classifier fails on raises the session to its highest label', async () => {
  const r = await afterFault(async (g) => {
    assert.equal(summary(await call(g, 'echo', { message: `quarterly ${MARKER}` })), 'ok');
  });
  assert.equal(r.sink, 'sink_ceiling_exceeded');
  assert.deepEqual(r.labels, [['public', 'confidential', 'fail_closed', 'echo']]);
});

test('server output the classifier fails on (prompts/get) raises the session to its highest label', async () => {
  const r = await afterFault(async (g) => {
    const prompt = await g.client.getPrompt({ name: 'args-prompt', arguments: { city: MARKER } }, { timeout: 20_000 });
    assert.equal(prompt.messages.length, 1); // the host got it
  });
  assert.equal(r.sink, 'sink_ceiling_exceeded');
  assert.deepEqual(r.labels, [['public', 'confidential', 'fail_closed', null]]);
});
