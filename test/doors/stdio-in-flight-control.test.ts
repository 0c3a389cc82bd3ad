// --max-in-flight over stdio holds back the host's requests, not its answers to the server: the
// host's answer to the sampling request server-everything sends in the middle of a call reaches
// the server while that call fills the door. Held behind the bound, the answer was never read,
// and the call waited for its own answer until --call-timeout. Real binary, the SDK client.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { CreateMessageRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { EVERYTHING, makeHome, writeFiles, PERMIT_ALL } from '../helpers/cli.js';
import { gateArgs } from '../helpers/gate.js';

const CANARY = 'CANARY-sampled-while-full-stdio-3e7a';

test("--max-in-flight 1: the host answers the server's sampling request of the call in flight, and the call ends", { timeout: 300_000 }, async () => {
  const f = writeFiles({
    'm.yaml': 'version: 1\nrelease: everything-sampling@1\ntools:\n  trigger-sampling-request:\n    effect: read\n    arguments:\n      prompt: { type: string, max_len: 200, required: true }\n',
    'p.cedar': PERMIT_ALL,
  });
  const args = gateArgs({ home: makeHome(), manifest: f['m.yaml'], policy: f['p.cedar'], flags: ['--max-in-flight', '1', '--call-timeout', '600s'], upstream: [process.execPath, EVERYTHING] });
  const client = new Client({ name: 'sampling-host', version: '1' }, { capabilities: { sampling: {} } });
  client.setRequestHandler(CreateMessageRequestSchema, async () => ({ role: 'assistant', model: 'm', stopReason: 'endTurn', content: { type: 'text', text: `sampled ${CANARY}` } }));
  await client.connect(new StdioClientTransport({ command: process.execPath, args, stderr: 'ignore' }), { timeout: 120_000 });
  // Bounded: held behind the bound, the answer never reached the server and this timed out.
  const r = await client.callTool({ name: 'trigger-sampling-request', arguments: { prompt: 'a haiku' } }, undefined, { timeout: 60_000 });
  assert.ok(JSON.stringify(r).includes(CANARY), "the host's answer reached the tool");
  await client.close();
});
