// The HTTP door answers as the client's Accept allows, q-values included (RFC 9110 12.5.1): a
// range with q=0 is "not acceptable", the most specific range naming a type decides, and a
// request for which JSON is preferred gets JSON. Raw requests to the real binary (server-memory
// behind it).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MEMORY, PERMIT_ALL, makeHome, writeFiles } from '../helpers/cli.js';
import { INIT, post, rawSession, startHttpGate } from '../helpers/http-gate.js';

const f = writeFiles({ 'm.yaml': 'version: 1\nrelease: http-accept@1\ntools:\n  read_graph: { effect: read, arguments: {} }\n', 'p.cedar': PERMIT_ALL });
const gate = () => startHttpGate({ home: makeHome(), manifest: f['m.yaml'], policy: f['p.cedar'], upstream: [process.execPath, MEMORY] });
const LIST = { jsonrpc: '2.0', id: 2, method: 'tools/list' };

test('POST: the answer is of a type the client accepts, by its q-values', async () => {
  const g = await gate();
  const sid = await rawSession(g.url);
  const answered = async (accept: string): Promise<[number, string | null]> => {
    const r = await post(g.url, LIST, { 'Mcp-Session-Id': sid, Accept: accept });
    await r.text();
    return [r.status, r.headers.get('content-type')];
  };
  // q=0 is a refusal of the type, not an acceptance of it.
  assert.deepEqual(await answered('application/json;q=0'), [406, 'application/json']);
  assert.deepEqual(await answered('application/json; q=0, text/event-stream;q=0'), [406, 'application/json']);
  assert.deepEqual(await answered('application/json, text/event-stream;q=0'), [200, 'application/json']);
  assert.deepEqual(await answered('*/*, text/event-stream;q=0.0'), [200, 'application/json']);
  assert.deepEqual(await answered('*/*;q=0.5, application/json;q=0'), [200, 'text/event-stream']);
  // JSON preferred by its q: JSON; as preferred as a stream, or below it: a stream.
  assert.deepEqual(await answered('application/json, text/event-stream;q=0.5'), [200, 'application/json']);
  assert.deepEqual(await answered('application/json, text/event-stream'), [200, 'text/event-stream']);
  assert.deepEqual(await answered('application/json;q=0.5, text/event-stream'), [200, 'text/event-stream']);
  assert.deepEqual(await answered('application/json'), [200, 'application/json']);
  // An initialize that accepts nothing the door sends opens no session.
  const init = await post(g.url, INIT, { Accept: 'application/json;q=0' });
  assert.equal(init.status, 406);
  assert.equal(init.headers.get('mcp-session-id'), null);
  await g.stop();
});

test('GET: a stream refused by q=0 is not opened', async () => {
  const g = await gate();
  const sid = await rawSession(g.url);
  const ac = new AbortController();
  const get = (accept: string) => fetch(g.url, { headers: { 'Mcp-Session-Id': sid, Accept: accept }, signal: ac.signal });
  const refused = await get('text/event-stream;q=0');
  assert.equal(refused.status, 406);
  await refused.text();
  assert.equal((await get('text/event-stream;q=0.1')).status, 200, 'the stream opens when accepted at any q');
  ac.abort();
  await g.stop();
});
