// A text resource an MCP server sends as a base64 `blob` (an embedded resource in a tool's
// result, a resources/read answer) is text the host decodes and the model reads: classify rules
// read it decoded. Before, only its base64 was scanned, no rule matched, and a public sink
// stayed open. The real gate binary in front of server-everything, whose blob resources are
// text/plain ("Resource N: This is a base64 blob ..."); an image's base64 stays unread (control).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EVERYTHING, fixtureFiles, PERMIT_ALL } from '../helpers/cli.js';
import { call, ledgerOf, startGate, summary, type RunningGate } from '../helpers/gate.js';

const MANIFEST = `version: 1
release: flow-classify-blob@1
labels: [public, confidential]
tools:
  get-resource-reference:
    effect: read
    accepts: confidential
    arguments:
      resourceType: { type: string, enum: [Text, Blob] }
      resourceId: { type: integer, minimum: 1, maximum: 100 }
  get-tiny-image: { effect: read, accepts: confidential, arguments: {} }
  get-sum: { effect: read, accepts: public, arguments: { a: { type: number, required: true }, b: { type: number, required: true } } }
classify:
  - { label: confidential, pattern: "Resource [0-9]+: This is a base64 blob" }
`;

async function afterShown(step: (g: RunningGate) => Promise<void>) {
  const f = fixtureFiles('cloakpipe-blob-', { manifest: MANIFEST, policy: PERMIT_ALL, context: { task: { id: 'T-blob' } } });
  const g = await startGate({ ...f, upstream: [process.execPath, EVERYTHING] });
  let sink: string;
  try {
    await step(g);
    const after = await call(g, 'get-sum', { a: 1, b: 2 });
    sink = after.ok ? 'ok' : after.reason;
  } finally {
    await g.close();
  }
  return { sink, labels: ledgerOf(f.home).filter((e) => e.kind === 'label').map((e) => [e.to, e.cause]) };
}

test('an embedded text resource sent as a blob is classified decoded', { timeout: 120_000 }, async () => {
  const r = await afterShown(async (g) => {
    const out = await call(g, 'get-resource-reference', { resourceType: 'Blob', resourceId: 7 });
    assert.ok(out.ok && JSON.stringify(out.result).includes('"blob"'), 'the host got a blob');
  });
  assert.deepEqual(r.labels, [['confidential', 'classify']]);
  assert.equal(r.sink, 'sink_ceiling_exceeded');
});

test('a resources/read answer with a text blob is classified decoded', { timeout: 120_000 }, async () => {
  const r = await afterShown(async (g) => {
    const read = await g.client.readResource({ uri: 'demo://resource/dynamic/blob/7' }, { timeout: 20_000 });
    assert.equal(typeof (read.contents[0] as { blob?: unknown }).blob, 'string');
  });
  assert.deepEqual(r.labels, [['confidential', 'classify']]);
  assert.equal(r.sink, 'sink_ceiling_exceeded');
});

test('an image is not read as text (control)', { timeout: 120_000 }, async () => {
  const r = await afterShown(async (g) => assert.equal(summary(await call(g, 'get-tiny-image', {})), 'ok'));
  assert.deepEqual(r.labels, []);
  assert.equal(r.sink, 'ok');
});
