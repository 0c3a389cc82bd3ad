// The gate keeps no argument value past its call: after calls were decided, recorded and
// answered, a heap snapshot of the process holding the open gate holds none of the canaries
// they carried, also where a policy reads the argument and Cedar's answer is kept for the next
// identical request (ADR 039).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { openGate } from '../../src/gate/open.js';
import { setLogSink } from '../../src/telemetry/log.js';
import type { UpstreamReply } from '../../src/core/outcome.js';
import { makeHome, writeFiles } from '../helpers/cli.js';
import { CANARY_MANIFEST, CANARY_POLICY, ownHeapSnapshot } from '../helpers/heap.js';

test('after its calls, an open gate holds none of the argument values a policy read, a reused answer included', async () => {
  const f = writeFiles({ 'm.yaml': CANARY_MANIFEST, 'p.cedar': CANARY_POLICY });
  setLogSink(() => undefined);
  const opened = await openGate({ home: makeHome(), manifestPath: f['m.yaml'], policyPath: f['p.cedar'], mode: 'enforce', approverKeys: [], callTimeoutMs: 5000 });
  try {
    const tag = randomUUID().replaceAll('-', '');
    // Made from parts here and never kept by the test: only the gate could hold the whole.
    const canary = (i: number) => ['canary', tag, String(i)].join('-');
    const reply = (): UpstreamReply => ({ result: { content: [{ type: 'text', text: 'done' }] } });
    const kinds: string[] = [];
    for (const i of [0, 1, 1, 2]) {
      const o = await opened.gate.handleCall({ tool: 'echo', arguments: { message: canary(i) }, meta: {} }, () => Promise.resolve(reply()));
      kinds.push(o.kind);
    }
    const refused = await opened.gate.handleCall({ tool: 'echo', arguments: { message: `${canary(3)}-forbidden` }, meta: {} }, () => Promise.resolve(reply()));
    kinds.push(refused.kind);
    assert.deepEqual(kinds, ['forwarded', 'forwarded', 'forwarded', 'forwarded', 'refused']);
    await new Promise((r) => setTimeout(r, 50)); // the result entries' group and the reports
    const heap = await ownHeapSnapshot();
    assert.ok(heap.includes('heap-canary@1'), 'the search finds a string that is there');
    assert.equal(heap.includes(tag), false, 'an argument value is still held by the gate');
  } finally {
    await opened.close('test');
    setLogSink(null);
  }
});
