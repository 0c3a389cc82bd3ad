// Progress for a request that has ended never reaches the host (MCP: progress notifications only
// while the request is in flight): the official SDK client reports one for a token it no longer
// knows as an error ("unknown token"), and a host that reuses tokens would credit it to another
// request. Real binary, a host speaking raw lines (so the order on the wire is what is checked),
// a server that sends progress after the answer, after the host's cancel, and after the gate
// gave up on the call (--call-timeout).
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { helperScript, makeHome, PERMIT_ALL, writeFiles } from '../helpers/cli.js';
import { RawGate } from '../helpers/raw-gate.js';

let files: Record<string, string>;
before(() => {
  files = writeFiles({ 'm.yaml': 'version: 1\nrelease: late-progress@1\ntools:\n  answered: { effect: read, arguments: {} }\n  unanswered: { effect: read, arguments: {} }\n', 'p.cedar': PERMIT_ALL });
});

async function gate(flags: string[] = []) {
  const g = new RawGate({ home: makeHome(), manifest: files['m.yaml'], policy: files['p.cedar'], flags, upstream: [process.execPath, helperScript('late-progress-server.js')] });
  await g.initialize();
  return g;
}
const call = (id: string, name: string) => JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: {}, _meta: { progressToken: `token-${id}` } } }) + '\n';

/** What the gate writes to the host until `last` holds of a message (each wait bounded by next()). */
async function until(g: RawGate, last: (m: any) => boolean) {
  const seen: any[] = [];
  for (;;) {
    const m = await g.next(60_000);
    seen.push(m);
    if (last(m)) return seen;
  }
}
const progressOf = (seen: any[]) => seen.filter((m) => m.method === 'notifications/progress').map((m) => [m.params.progressToken, m.params.progress]);

test('progress after the answer is dropped', async () => {
  const g = await gate();
  g.send(call('a', 'answered'));
  // The server's log message follows its late progress; the answer comes once recorded.
  const seen = await until(g, (m) => m.id === 'a');
  assert.ok(seen.some((m) => m.params?.data === 'after-answer'), JSON.stringify(seen));
  assert.deepEqual(seen.at(-1).result?.content, [{ type: 'text', text: 'done' }]);
  // Before, [token-a, 2] followed the answer's progress.
  assert.deepEqual(progressOf(seen), [['token-a', 1]]);
  assert.equal(await g.end(), 0);
});

test('progress after the host cancelled the call is dropped', async () => {
  const g = await gate();
  g.send(call('b', 'unanswered'));
  assert.deepEqual(progressOf([await g.next(60_000)]), [['token-b', 1]], 'progress while it runs');
  g.send(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'b', reason: 'user' } }) + '\n');
  const seen = await until(g, (m) => m.params?.data === 'after-cancel');
  assert.deepEqual(progressOf(seen), []);
  assert.equal(await g.end(), 0);
});

test('progress after the gate gave up on the call (--call-timeout) is dropped', async () => {
  const g = await gate(['--call-timeout', '2s']);
  g.send(call('c', 'unanswered'));
  // The gate's own cancel at the timeout, which the server follows with progress and its message.
  const seen = await until(g, (m) => m.params?.data === 'after-cancel');
  assert.ok(seen.some((m) => m.id === 'c' && m.error?.code === -32003), JSON.stringify(seen));
  assert.deepEqual(progressOf(seen), [['token-c', 1]]);
  assert.equal(await g.end(), 0);
});
