// The ids a session gave up on are remembered (ADR 056) so that a late answer cannot match a
// request that reuses one; 4,096 of them at most. An id is whatever the host sends, up to 1 KiB
// (ADR 108; before, a line's 4 MiB): kept as they came, those 4,096 ids could hold 4 MiB (16 GiB
// before). A long id is remembered by its digest, and still cannot be reused while remembered.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openGate } from '../../src/gate/open.js';
import { Relay } from '../../src/doors/relay.js';
import { makeHome, writeFiles, PERMIT_ALL } from '../helpers/cli.js';
import { ownHeapSnapshot } from '../helpers/heap.js';
import { MemoryTransport } from './memory-transport.js';

const MANIFEST = `version: 1
release: abandoned-id-size@1
tools:
  echo: { effect: read, arguments: { text: { type: string } } }
`;
const MARK = 'LONG-ID-GIVEN-UP-ON';
const IDS = 8;
const longId = (k: number) => `${MARK}-${k}-${'x'.repeat(960)}`; // the longest taken: 1 KiB

test('a long id given up on is remembered by its digest, not kept whole, and is still refused while remembered', { timeout: 120_000 }, async () => {
  const files = writeFiles({ 'm.yaml': MANIFEST, 'p.cedar': PERMIT_ALL });
  const opened = await openGate({ home: makeHome(), manifestPath: files['m.yaml'], policyPath: files['p.cedar'], mode: 'enforce', approverKeys: [], callTimeoutMs: 10_000 });
  const host = new MemoryTransport();
  const upstream = new MemoryTransport(); // answers nothing
  const relay = new Relay({ gate: opened.gate, host, upstream, maxLineBytes: 4 << 20, requestTimeoutMs: 1 });
  const done = relay.run();
  for (let k = 0; k < IDS; k++) host.deliver({ jsonrpc: '2.0', id: longId(k), method: 'resources/read', params: { uri: 'hang:' } });
  const cancels = () => upstream.sent.filter((m) => m.method === 'notifications/cancelled').length;
  for (let waited = 0; cancels() < IDS; waited++) {
    assert.ok(waited < 12_000, 'every request is given up on');
    await new Promise((r) => setTimeout(r, 5));
  }
  // What the test's own transports kept of the messages is dropped: only the relay's memory is left.
  upstream.sent.length = 0;
  host.sent.length = 0;
  const heap = await ownHeapSnapshot();
  assert.ok(!new RegExp(`${MARK}-\\d+-x`).test(heap), 'the session holds none of the long ids it gave up on');

  const refused = host.next();
  host.deliver({ jsonrpc: '2.0', id: longId(3), method: 'resources/read', params: { uri: 'hang:' } });
  assert.equal((await refused).error.data.detail, 'a request with this id is already in flight');
  host.end();
  assert.equal(await done, 0);
  await opened.close('ended');
});
