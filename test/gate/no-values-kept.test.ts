// The gate keeps no argument value past its call: after calls were decided, recorded and
// answered, a heap snapshot of the process holding the open gate holds none of the canaries
// they carried, also where a policy reads the argument and Cedar's answer is kept for the next
// identical request (ADR 039).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { getHeapSnapshot } from 'node:v8';
import { openGate } from '../../src/gate/open.js';
import { setLogSink } from '../../src/telemetry/log.js';
import type { UpstreamReply } from '../../src/core/outcome.js';
import { makeHome, writeFiles } from '../helpers/cli.js';

const MANIFEST = `version: 1
release: no-values-kept@1
tools:
  lookup:
    effect: read
    arguments:
      key: { type: string, max_len: 128 }
`;
// The forbid reads the argument, so it crosses into Cedar and is a key of the answer cache.
const POLICY = `permit (principal, action, resource);
forbid (principal, action, resource) when { context.args has key && context.args.key like "*forbidden*" };
`;

async function snapshotText(): Promise<string> {
  const chunks: string[] = [];
  for await (const c of getHeapSnapshot()) chunks.push(String(c)); // the snapshot runs a full GC first
  return chunks.join('');
}

test('after its calls, an open gate holds none of the argument values a policy read, a reused answer included', async () => {
  const f = writeFiles({ 'm.yaml': MANIFEST, 'p.cedar': POLICY });
  setLogSink(() => undefined);
  const opened = await openGate({ home: makeHome(), manifestPath: f['m.yaml'], policyPath: f['p.cedar'], mode: 'enforce', approverKeys: [], callTimeoutMs: 5000 });
  try {
    const tag = randomUUID().replaceAll('-', '');
    // Made from parts here and never kept by the test: only the gate could hold the whole.
    const canary = (i: number) => ['canary', tag, String(i)].join('-');
    const reply = (): UpstreamReply => ({ result: { content: [{ type: 'text', text: 'done' }] } });
    const kinds: string[] = [];
    for (const i of [0, 1, 1, 2]) {
      const o = await opened.gate.handleCall({ tool: 'lookup', arguments: { key: canary(i) }, meta: {} }, () => Promise.resolve(reply()));
      kinds.push(o.kind);
    }
    const refused = await opened.gate.handleCall({ tool: 'lookup', arguments: { key: `${canary(3)}-forbidden` }, meta: {} }, () => Promise.resolve(reply()));
    kinds.push(refused.kind);
    assert.deepEqual(kinds, ['forwarded', 'forwarded', 'forwarded', 'forwarded', 'refused']);
    await new Promise((r) => setTimeout(r, 50)); // the result entries' group and the reports
    const heap = await snapshotText();
    assert.ok(heap.includes('no-values-kept@1'), 'the snapshot holds the gate'); // the search can find what is there
    assert.equal(heap.includes(tag), false, 'an argument value is still held by the gate');
  } finally {
    await opened.close('test');
    setLogSink(null);
  }
});
