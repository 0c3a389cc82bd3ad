// A marker anywhere the server puts it on its way to the host raises the label: a sampling
// request the server sends the host (its messages go to the model), a tool's error data, a
// result's structuredContent or _meta, with the result's text plain. The real binary, the
// official SDK client as the host, marking-server.ts; flow-server-notifications' control holds.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { call } from '../helpers/gate.js';
import { afterMarked } from '../helpers/marking.js';

for (const tool of ['sample', 'fail', 'structured', 'meta']) {
  test(`a marker in the server's ${tool} output raises the label`, { timeout: 120_000 }, async () => {
    const r = await afterMarked(async (g) => {
      const out = await call(g, tool, {});
      assert.ok(out.ok || out.code === -32000, 'the host got the answer'); // fail: the tool's own error
    });
    assert.deepEqual(r.labels, [['confidential', 'classify']]);
    assert.equal(r.sink, 'sink_ceiling_exceeded');
  });
}
