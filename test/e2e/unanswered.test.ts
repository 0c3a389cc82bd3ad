// A server that never answers a request that is not a call, driven by the official SDK client:
// the client's own request timeout cancels each such request, and the gate frees its place then
// (ADR 053), so at a small --max-in-flight the session goes on as it does straight to the server,
// instead of the gate no longer reading the host.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { makeHome, writeFiles, helperScript, PERMIT_ALL } from '../helpers/cli.js';
import { startGate } from '../helpers/gate.js';

const MANIFEST = `version: 1\nrelease: unanswered@1\ntools:\n  echo: { effect: read, arguments: {} }\n`;
const SERVER = [process.execPath, helperScript('misbehaving-upstream.js')];

/** Three reads the server never answers, each given up on by the client, then a call. */
async function session(client: Client): Promise<string[]> {
  const seen: string[] = [];
  for (let i = 0; i < 3; i++) seen.push(await client.readResource({ uri: 'hang:' }, { timeout: 300 }).then(() => 'answered', (e: Error) => e.message));
  const echoed = (await client.callTool({ name: 'echo', arguments: {} }, undefined, { timeout: 20_000 })) as { content: { text: string }[] };
  return [...seen, echoed.content[0].text];
}

test('the SDK client giving up on requests the server never answers frees their places: at --max-in-flight 2 the session goes on as it does straight to the server', async () => {
  const direct = new Client({ name: 'direct', version: '1' });
  await direct.connect(new StdioClientTransport({ command: SERVER[0], args: SERVER.slice(1), stderr: 'ignore' }));
  const straight = await session(direct);
  await direct.close();
  assert.deepEqual(straight, [...Array(3).fill('MCP error -32001: Request timed out'), 'ok']);
  const files = writeFiles({ 'm.yaml': MANIFEST, 'p.cedar': PERMIT_ALL });
  const g = await startGate({ home: makeHome(), manifest: files['m.yaml'], policy: files['p.cedar'], flags: ['--max-in-flight', '2', '--call-timeout', '60s'], upstream: SERVER });
  assert.deepEqual(await session(g.client), straight);
  await g.close();
});
