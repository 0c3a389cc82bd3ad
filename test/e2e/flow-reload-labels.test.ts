// A manifest reloaded under a running session with a label the session's order does not hold
// (ADR 019: a session keeps the label order it started with). A tool whose `returns` names it
// still raises the session: to the highest label the session knows, never not at all.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PERMIT_ALL } from '../helpers/cli.js';
import { call } from '../helpers/recording-gate.js';
import { replaceFile } from '../helpers/gate.js';
import { ledgerOf, summary } from '../helpers/support-desk.js';
import { flowSetup, records, startFlowGate } from '../helpers/flow-gate.js';

const MANIFEST = (labels: string, returns: string) => `version: 1
release: flow-reload@1
labels: [${labels}]
tools:
  read_record: { effect: read, returns: ${returns}, accepts: ${returns}, arguments: { id: { type: string, max_len: 200 } } }
  post_public: { effect: write, accepts: public, arguments: { text: { type: string, max_len: 2000 } } }
`;

/**
 * A gate over `s` through `steps` (a post_public 'before' among them, then a call that raises the
 * label): a post_public 'after' is refused sink_ceiling_exceeded and only 'before' reached the
 * tool. Returns the session's label entries.
 */
async function postRefusedAfter(s: ReturnType<typeof flowSetup>, steps: (g: Awaited<ReturnType<typeof startFlowGate>>) => Promise<void>) {
  const g = await startFlowGate(s);
  try {
    await steps(g);
    const after = await call(g, 'post_public', { text: 'after' });
    assert.equal(after.ok ? 'ok' : after.reason, 'sink_ceiling_exceeded');
  } finally {
    await g.close();
  }
  assert.deepEqual(records(s).filter((r) => r.tool === 'post_public').map((r) => r.arguments.text), ['before']);
  return ledgerOf(s.home).filter((e) => e.kind === 'label');
}

test('a reloaded manifest whose returns names a label the session does not know raises the session to its highest', async () => {
  const s = flowSetup({ policy: PERMIT_ALL, manifest: MANIFEST('public, internal', 'internal') });
  const labels = await postRefusedAfter(s, async (g) => {
    assert.equal(summary(await call(g, 'post_public', { text: 'before' })), 'ok');
    replaceFile(s.manifest, MANIFEST('public, internal, secret', 'secret'));
    assert.equal(summary(await call(g, 'read_record', { id: 'R-1' })), 'ok');
  });
  assert.deepEqual(labels.map((e) => [e.from, e.to, e.tool]), [['public', 'internal', 'read_record']]);
});

const ECHO = (classify: string) => `version: 1
release: flow-reload@1
labels: [public, internal, confidential]
tools:
  echo: { effect: read, accepts: confidential, arguments: { text: { type: string, max_len: 200 } } }
  post_public: { effect: write, accepts: public, arguments: { text: { type: string, max_len: 2000 } } }
${classify}`;

test('a classify rule added by a reloaded manifest holds from the next result, in the running session', async () => {
  const s = flowSetup({ policy: PERMIT_ALL, manifest: ECHO('') });
  const labels = await postRefusedAfter(s, async (g) => {
    replaceFile(s.manifest, ECHO('classify:\n  - { label: confidential, pattern: "ACCT-[0-9]{8}" }\n'));
    assert.equal(summary(await call(g, 'post_public', { text: 'before' })), 'ok');
    assert.equal(summary(await call(g, 'echo', { text: 'account ACCT-12345678' })), 'ok');
  });
  assert.deepEqual(labels.map((e) => [e.from, e.to, e.cause]), [['public', 'confidential', 'classify']]);
});
