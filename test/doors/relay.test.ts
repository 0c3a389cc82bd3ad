// The relay is the one place every door's session logic lives: several sessions in one process
// (one relay each) keep their ids, their calls and their upstreams apart.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openGate } from '../../src/gate/open.js';
import { Relay, MAX_ABANDONED_IDS } from '../../src/doors/relay.js';
import { makeHome, writeFiles, PERMIT_ALL } from '../helpers/cli.js';
import { MemoryTransport } from './memory-transport.js';

const MANIFEST = `version: 1
release: relay-test@1
tools:
  echo: { effect: read, arguments: { text: { type: string } } }
`;

async function session(files: Record<string, string>, name: string) {
  const opened = await openGate({ home: makeHome(), manifestPath: files['m.yaml'], policyPath: files['p.cedar'], mode: 'enforce', approverKeys: [], callTimeoutMs: 10_000 });
  const host = new MemoryTransport();
  // Each upstream answers with its own name, so a crossed reply would show.
  const upstream = new MemoryTransport((m, t) => {
    if (m.method === 'tools/call') setImmediate(() => t.deliver({ jsonrpc: '2.0', id: m.id, result: { content: [{ type: 'text', text: `${name}:${m.params.arguments.text}` }] } }));
  });
  const relay = new Relay({ gate: opened.gate, host, upstream, maxLineBytes: 1 << 20 });
  const done = relay.run();
  return { host, upstream, done, close: () => opened.close('ended') };
}

test('two sessions in one process: the same id on each is answered by its own upstream', async () => {
  const files = writeFiles({ 'm.yaml': MANIFEST, 'p.cedar': PERMIT_ALL });
  const a = await session(files, 'A');
  const b = await session(files, 'B');
  const call = (text: string) => ({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo', arguments: { text } } });
  const ra = a.host.next();
  const rb = b.host.next();
  a.host.deliver(call('one'));
  b.host.deliver(call('two'));
  assert.equal((await ra).result.content[0].text, 'A:one');
  assert.equal((await rb).result.content[0].text, 'B:two');
  // A refusal in one session leaves the other untouched.
  const refused = a.host.next();
  a.host.deliver({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'nope', arguments: {} } });
  assert.equal((await refused).error.data.reason, 'undeclared_tool');
  assert.equal(b.upstream.sent.filter((m) => m.method === 'tools/call').length, 1);
  a.host.end();
  b.host.end();
  assert.equal(await a.done, 0);
  assert.equal(await b.done, 0);
  await a.close();
  await b.close();
});

test('a session remembers the newest MAX_ABANDONED_IDS ids it gave up on, each cancelled at the server: the oldest may be reused, a remembered one may not', async () => {
  const files = writeFiles({ 'm.yaml': MANIFEST, 'p.cedar': PERMIT_ALL });
  const opened = await openGate({ home: makeHome(), manifestPath: files['m.yaml'], policyPath: files['p.cedar'], mode: 'enforce', approverKeys: [], callTimeoutMs: 10_000 });
  const host = new MemoryTransport();
  const upstream = new MemoryTransport(); // answers nothing
  const relay = new Relay({ gate: opened.gate, host, upstream, maxLineBytes: 1 << 20, requestTimeoutMs: 1 });
  const done = relay.run();
  const read = (id: number) => ({ jsonrpc: '2.0', id, method: 'resources/read', params: { uri: 'hang:' } });
  for (let id = 0; id <= MAX_ABANDONED_IDS; id++) host.deliver(read(id));
  const cancelled = () => upstream.sent.filter((m) => m.method === 'notifications/cancelled').map((m) => m.params.requestId);
  while (cancelled().length <= MAX_ABANDONED_IDS) await new Promise((r) => setTimeout(r, 5));
  assert.deepEqual(cancelled(), [...Array(MAX_ABANDONED_IDS + 1).keys()], 'each one given up on is cancelled at the server, once');
  const refused = host.next();
  host.deliver(read(MAX_ABANDONED_IDS));
  assert.equal((await refused).error.data.detail, 'a request with this id is already in flight');
  const reads = () => upstream.sent.filter((m) => m.method === 'resources/read' && m.id === 0).length;
  host.deliver(read(0)); // forgotten: the oldest
  assert.equal(reads(), 2, 'the oldest id is forgotten, so it may be used again');
  host.end();
  assert.equal(await done, 0);
  await opened.close('ended');
});
