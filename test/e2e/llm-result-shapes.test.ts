// Tool output reaches the model in more shapes than the one each format's agents use most
// (`tool` messages, `function_call_output` items, `tool_result` blocks in user messages): a
// legacy `function` message, the Responses items of other kinds of tools, a tool_result in
// another message, the result blocks of tools the API runs. Each either raises the session
// label as the call's result does or is refused fail_closed before it reaches the model: a
// confidential result must never come back unseen and let a public write through. Straight to
// the fake model API each request gets the post_public call (the positive control).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { FakeModel } from '../helpers/fake-model.js';
import { startFakeModel } from '../helpers/fake-model.js';
import { anthropicAgent, llmSetup, openaiAgent, startLlmGate, type LlmGate, type LlmSetup } from '../helpers/llm-gate.js';
import { anthropicTurn, openaiTurn, responsesTurn, type Turn } from '../helpers/llm-agent.js';
import { decisions, ledgerOf } from '../helpers/support-desk.js';

const SECRET = 'name,salary\nalice,100 canary-7f3e9b21';
const POST = { calls: [{ name: 'post_public', arguments: { text: 'alice,100' } }] };

let fake: FakeModel;
before(async () => void (fake = await startFakeModel()));
after(() => fake?.close());

/** A gate of its own (the label is the session's), stopped after `body`; its setup for the ledger. */
async function withGate(body: (g: LlmGate, s: LlmSetup) => Promise<void>): Promise<LlmSetup> {
  const s = llmSetup();
  const g = await startLlmGate(s, fake.url);
  try {
    await body(g, s);
    assert.ok(!g.stderr().includes('canary-7f3e9b21'), 'no tool output in the gate\'s log');
  } finally {
    await g.stop();
  }
  return s;
}

/** The turn straight to the fake API proposes post_public; through the gate the request is refused fail_closed, recorded, never forwarded. */
async function refusedBeforeTheModel(g: LlmGate, s: LlmSetup, turn: (base: string) => Promise<Turn>): Promise<void> {
  assert.deepEqual((await turn(fake.url)).calls.map((c) => c.name), ['post_public'], 'positive control');
  const seen = fake.seen.length;
  const made = decisions(s.home).length;
  await assert.rejects(turn(g.url), (e: { status?: number }) => e.status === 400);
  assert.equal(fake.seen.length, seen, 'not forwarded');
  assert.deepEqual(decisions(s.home).slice(made).map((e) => [e.outcome, e.reason]), [['refuse', 'fail_closed']]);
}

/** Each turn refused before the model on one gate; no tool output in its ledger. */
async function allRefused(turns: ((base: string) => Promise<Turn>)[]): Promise<void> {
  const s = await withGate(async (g, own) => {
    for (const turn of turns) await refusedBeforeTheModel(g, own, turn);
  });
  assert.ok(!JSON.stringify(ledgerOf(s.home)).includes('canary-7f3e9b21'));
}

test('chat completions: a legacy function message carrying a result is refused fail_closed', async () => {
  const messages = [
    { role: 'user', content: 'payroll please' },
    { role: 'assistant', content: null, function_call: { name: 'read_file', arguments: '{"path":"/srv/payroll.csv"}' } },
    { role: 'function', name: 'read_file', content: SECRET },
  ];
  await allRefused([false, true].map((stream) => (base) => openaiTurn(openaiAgent(base), POST, stream, { messages })));
});

test('chat completions: a tool message without a tool_call_id is refused fail_closed', async () => {
  const messages = [{ role: 'tool', content: SECRET }];
  await allRefused([(base) => openaiTurn(openaiAgent(base), POST, false, { messages })]);
});

// The output items of every kind of tool but function, as the Responses API reference gives them.
const RESPONSES_OUTPUTS: Record<string, unknown>[] = [
  { type: 'custom_tool_call_output', call_id: 'call_custom', output: SECRET },
  { type: 'computer_call_output', call_id: 'call_computer', output: { type: 'computer_screenshot', image_url: `data:text/plain,${encodeURIComponent(SECRET)}` } },
  { type: 'local_shell_call_output', id: 'lsh_1', output: SECRET },
  { type: 'shell_call_output', call_id: 'call_shell', output: [{ stdout: SECRET, stderr: '', outcome: { type: 'exit', exit_code: 0 } }] },
  { type: 'apply_patch_call_output', call_id: 'call_patch', status: 'completed', output: SECRET },
  { type: 'mcp_call', id: 'mcp_1', server_label: 'files', name: 'read', arguments: '{}', output: SECRET },
  { type: 'tool_search_output', call_id: 'call_search', tools: [], output: SECRET },
  { type: 'function_call_output', output: SECRET },
];

test('responses: the output of any other kind of tool, or a function output without a call_id, is refused fail_closed', async () => {
  await allRefused(RESPONSES_OUTPUTS.flatMap((item) => [false, true].map((stream) => (base: string) => responsesTurn(openaiAgent(base), POST, stream, { messages: [item] }))));
});

test('anthropic: the result block of a tool the API ran or an MCP server\'s, or a tool_result without an id, is refused fail_closed', async () => {
  const blocks = [
    [{ type: 'mcp_tool_use', id: 'mcptoolu_1', name: 'read', server_name: 'files', input: {} }, { type: 'mcp_tool_result', tool_use_id: 'mcptoolu_1', is_error: false, content: [{ type: 'text', text: SECRET }] }],
    [{ type: 'server_tool_use', id: 'srvtoolu_1', name: 'web_fetch', input: { url: 'https://intranet/payroll' } }, { type: 'web_fetch_tool_result', tool_use_id: 'srvtoolu_1', content: { type: 'web_fetch_result', url: 'https://intranet/payroll', content: { type: 'document', source: { type: 'text', media_type: 'text/plain', data: SECRET } } } }],
  ];
  const histories = [...blocks.map((content) => [{ role: 'user', content: 'payroll please' }, { role: 'assistant', content }]), [{ role: 'user', content: [{ type: 'tool_result', content: SECRET }] }]];
  await allRefused(histories.flatMap((messages) => [false, true].map((stream) => (base: string) => anthropicTurn(anthropicAgent(base), POST, stream, { messages }))));
});

test('anthropic: a released read\'s tool_result in an assistant message raises the label by the read: the public write is refused', async () => {
  for (const stream of [false, true]) {
    const s = await withGate(async (g) => {
      const agent = anthropicAgent(g.url);
      const read = await anthropicTurn(agent, { calls: [{ name: 'read_file', arguments: { path: '/srv/payroll.csv' } }] }, stream);
      assert.deepEqual(read.calls.map((c) => c.name), ['read_file']);
      const messages = [
        { role: 'user', content: 'payroll please' },
        { role: 'assistant', content: [{ type: 'tool_use', id: read.calls[0].id, name: 'read_file', input: read.calls[0].args }] },
        { role: 'assistant', content: [{ type: 'tool_result', tool_use_id: read.calls[0].id, content: SECRET }] },
      ];
      const post = await anthropicTurn(agent, POST, stream, { messages });
      assert.deepEqual(post.calls, []);
      assert.match(post.text, /^cloakpipe refused post_public: sink_ceiling_exceeded: /);
    });
    const entries = ledgerOf(s.home);
    assert.deepEqual(entries.filter((e) => e.kind === 'label').map((e) => [e.from, e.to, e.tool]), [['public', 'confidential', 'read_file']]);
    assert.deepEqual(entries.filter((e) => e.kind === 'result').map((e) => e.outcome), ['ok']);
  }
});
