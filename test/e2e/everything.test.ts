// The official SDK client → the real gate binary → @modelcontextprotocol/server-everything.
// Declared calls work with results unchanged; each decision refusal is produced by a realistic
// call; progress notifications and other methods pass through.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { EVERYTHING, makeHome, writeFiles, cloakpipe } from '../helpers/cli.js';
import { startGate, type RunningGate } from '../helpers/gate.js';

const MANIFEST = `version: 1
release: everything-test@1
tools:
  echo:
    effect: read
    arguments:
      message: { type: string, max_len: 200, required: true }
  get-sum:
    effect: read
    arguments:
      a: { type: number, required: true, minimum: -1000, maximum: 1000 }
      b: { type: number, required: true }
  get-structured-content:
    effect: read
    arguments:
      location: { type: string, enum: ["New York", "Chicago"], required: true }
  get-annotated-message:
    effect: read
    arguments:
      messageType: { type: string, one_of_context: task.message_types, required: true }
      includeImage: { type: boolean }
  trigger-long-running-operation:
    effect: read
    arguments:
      duration: { type: number, maximum: 5 }
      steps: { type: integer, maximum: 10 }
`;
const POLICY = `@id("all-declared") permit (principal, action == Action::"call_tool", resource);\n`;
const CONTEXT = { task: { id: 'T-1', message_types: ['success', 'debug'] } };

let home: string;
let gated: RunningGate;
let direct: Client;

before(async () => {
  const f = writeFiles({ 'm.yaml': MANIFEST, 'p.cedar': POLICY, 'c.json': CONTEXT });
  home = makeHome();
  gated = await startGate({ home, manifest: f['m.yaml'], policy: f['p.cedar'], context: f['c.json'], upstream: [process.execPath, EVERYTHING, 'stdio'] });
  direct = new Client({ name: 'direct', version: '1' });
  await direct.connect(new StdioClientTransport({ command: process.execPath, args: [EVERYTHING, 'stdio'], stderr: 'ignore' }));
});

after(async () => {
  await gated?.close();
  await direct?.close();
});

async function refusal(p: Promise<unknown>): Promise<{ code: number; data: any }> {
  try {
    await p;
  } catch (e) {
    assert.ok(e instanceof McpError, `expected a JSON-RPC error, got ${e}`);
    return { code: e.code, data: e.data };
  }
  assert.fail('the call was not refused');
}

test('declared calls are answered exactly as the server answers them directly', async () => {
  for (const [name, args] of [
    ['echo', { message: 'hello through the gate' }],
    ['get-sum', { a: 2, b: 40 }],
    ['get-structured-content', { location: 'Chicago' }],
    ['get-annotated-message', { messageType: 'success', includeImage: false }],
  ] as const) {
    const viaGate = await gated.client.callTool({ name, arguments: args });
    const plain = await direct.callTool({ name, arguments: args });
    assert.deepEqual(viaGate, plain, name);
  }
});

test('each decision refusal comes from a realistic call, with digests and its ledger entry', async () => {
  const cases: [string, Record<string, unknown>, string][] = [
    ['get-env', {}, 'undeclared_tool'], // would hand the agent the server's environment
    ['echo', { message: 'hi', secret: 'x' }, 'undeclared_argument'],
    ['get-sum', { a: 5000, b: 1 }, 'argument_invalid'],
    ['get-sum', { a: '1', b: 1 }, 'argument_invalid'],
    ['echo', { message: 'x'.repeat(201) }, 'argument_invalid'],
    ['get-structured-content', { location: 'Los Angeles' }, 'argument_invalid'],
    ['echo', {}, 'argument_invalid'],
    ['get-annotated-message', { messageType: 'error' }, 'scope_mismatch'],
  ];
  for (const [name, args, reason] of cases) {
    const r = await refusal(gated.client.callTool({ name, arguments: args }));
    assert.equal(r.code, -32001, name);
    assert.equal(r.data.reason, reason, `${name} ${JSON.stringify(args)}`);
    assert.match(r.data.fingerprint, /^sha256:[0-9a-f]{64}$/);
    assert.match(r.data.policy_digest, /^sha256:[0-9a-f]{64}$/);
    assert.equal(typeof r.data.entry, 'number');
  }
  const shown = cloakpipe(['ledger', 'show', '--home', home, '--json']);
  assert.equal(shown.status, 0);
  const entries = shown.stdout.trim().split('\n').map((l) => JSON.parse(l));
  const reasons = entries.filter((e) => e.kind === 'decision' && e.outcome === 'refuse').map((e) => e.reason);
  for (const c of cases) assert.ok(reasons.includes(c[2]));
});

test('progress notifications of a long-running tool pass through', async () => {
  const progress: number[] = [];
  const r = await gated.client.callTool(
    { name: 'trigger-long-running-operation', arguments: { duration: 1, steps: 3 } },
    undefined,
    { onprogress: (p) => progress.push(p.progress) },
  );
  assert.ok(!r.isError);
  assert.ok(progress.length >= 2, `progress notifications seen: ${progress.length}`);
});

test('other methods pass through after strict parsing', async () => {
  const [g, d] = [await gated.client.listTools(), await direct.listTools()];
  // tools/list offers only the declared tools (product.md 7a), each exactly as the server gave it.
  const declared = ['echo', 'get-sum', 'get-structured-content', 'get-annotated-message', 'trigger-long-running-operation'];
  assert.deepEqual(g, { ...d, tools: d.tools.filter((t) => declared.includes(t.name)) });
  assert.equal(g.tools.length, declared.length);
  const resources = await gated.client.listResources();
  assert.ok(resources.resources.length > 0);
  const read = await gated.client.readResource({ uri: resources.resources[0].uri });
  assert.deepEqual(read, await direct.readResource({ uri: resources.resources[0].uri }));
  const prompts = await gated.client.listPrompts();
  assert.deepEqual(prompts, await direct.listPrompts());
  await gated.client.ping();
});
