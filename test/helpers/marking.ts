// The real gate binary in front of marking-server.ts: the host is shown the marked text one way,
// then calls `post` (accepts public). What the label did is what the sink's answer says and what
// the ledger's label entries name; the marked text is in no entry and no log line.
import assert from 'node:assert/strict';
import { fixtureFiles, helperScript, PERMIT_ALL } from './cli.js';
import { call, ledgerOf, startGate, type RunningGate } from './gate.js';

/** The marker is also the canary: the ledger and the gate's stderr must never hold it. */
export const MARKER = 'ACCT-73915524';
export const MARKED = `name,account\nquixote,${MARKER}\n`;

const MANIFEST = `version: 1
release: marking@1
labels: [public, confidential]
tools:
  blob: { effect: read, accepts: confidential, arguments: { mimeType: { type: string, max_len: 200 }, charset: { type: string, max_len: 20 } } }
  link: { effect: read, accepts: confidential, arguments: {} }
  query: { effect: read, accepts: confidential, arguments: {} }
  progress: { effect: read, accepts: confidential, arguments: {} }
  log: { effect: read, accepts: confidential, arguments: {} }
  sample: { effect: read, accepts: confidential, arguments: {} }
  fail: { effect: read, accepts: confidential, arguments: {} }
  structured: { effect: read, accepts: confidential, arguments: {} }
  meta: { effect: read, accepts: confidential, arguments: {} }
  post: { effect: read, accepts: public, arguments: {} }
classify:
  - { label: confidential, pattern: "ACCT-[0-9]{8}" }
`;

/** `show` shows the host something; returns the sink's answer and the label entries [to, cause]. */
export async function afterMarked(show: (g: RunningGate) => Promise<void>): Promise<{ sink: string; labels: string[][] }> {
  const f = fixtureFiles('cloakpipe-marking-', { manifest: MANIFEST, policy: PERMIT_ALL, context: { task: { id: 'T-marking' } } });
  const g = await startGate({ ...f, upstream: [process.execPath, helperScript('marking-server.js')], env: { MARKED } });
  let sink: string;
  try {
    await show(g);
    const after = await call(g, 'post', {});
    sink = after.ok ? 'ok' : after.reason;
  } finally {
    await g.close();
  }
  const ledger = ledgerOf(f.home);
  for (const where of [g.stderr(), JSON.stringify(ledger)]) assert.ok(!where.includes(MARKER), 'the marked text is in a log or an entry');
  return { sink, labels: ledger.filter((e) => e.kind === 'label').map((e) => [e.to, e.cause]) };
}
