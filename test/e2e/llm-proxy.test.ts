// cloakpipe llm-proxy end to end: the real binary between the official OpenAI and Anthropic
// SDKs and a fake model API that answers in both wire formats, streamed and not. Allowed
// calls reach the agent exactly as the model sent them (the same bytes as the same request
// sent straight to the API); every refusal code a proposed call can meet rewrites the response
// into one the SDK reads without error, with the call gone, a text part naming the refusal and
// the finish reason adjusted; an unreadable response is refused fail_closed.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import { listenLocal } from '../helpers/local-http.js';
import { startFakeModel, type FakeModel, type Script, type ScriptCall } from '../helpers/fake-model.js';
import type Anthropic from '@anthropic-ai/sdk';
import { generateText } from 'ai';
import { createAnthropic } from '@ai-sdk/anthropic';
import { llmSetup, startLlmGate, openaiAgent, anthropicAgent, API_KEY, TOOLS_ANTHROPIC, TOOLS_OPENAI, TOOLS_RESPONSES, type LlmGate, type LlmSetup } from '../helpers/llm-gate.js';
import { anthropicParams, anthropicTurn, COMBOS, openaiParams, openaiTurn, rawTurn, responsesParams, responsesTurn, type Format, type Turn } from '../helpers/llm-agent.js';
import { decisions } from '../helpers/support-desk.js';
import { callFile, keygen } from '../helpers/recording-gate.js';
import { cloakpipe } from '../helpers/cli.js';

let fake: FakeModel;
let s: LlmSetup;
let gate: LlmGate;
let approver: string;
let stranger: string;

before(async () => {
  fake = await startFakeModel();
  s = llmSetup();
  keygen(join(s.dir, 'approver'));
  keygen(join(s.dir, 'stranger'));
  approver = join(s.dir, 'approver');
  stranger = join(s.dir, 'stranger');
  gate = await startLlmGate(s, fake.url, ['--approver-key', `${approver}.pub`]);
});

after(async () => {
  await gate?.stop();
  await fake?.close();
});

function turn(base: string, format: Format, script: Script, stream: boolean, headers: Record<string, string> = {}): Promise<Turn> {
  if (format === 'responses') return responsesTurn(openaiAgent(base, headers), script, stream);
  return format === 'openai' ? openaiTurn(openaiAgent(base, headers), script, stream) : anthropicTurn(anthropicAgent(base, headers), script, stream);
}

const WEATHER = { name: 'get_weather', arguments: { city: 'Paris' } };
// A Responses turn has no finish reason: the agent runs the function calls it holds, and the
// response stays completed whether calls remain or not.
const TOOL_FINISH = { openai: 'tool_calls', responses: 'completed', anthropic: 'tool_use' };
const TEXT_FINISH = { openai: 'stop', responses: 'completed', anthropic: 'end_turn' };

const ALLOWED: Record<string, Script> = {
  'one call after text': { text: 'Let me check the weather in Paris.', calls: [WEATHER] },
  'one call, no text': { calls: [{ name: 'read_file', arguments: { path: '/srv/notes/today.md' } }] },
  'parallel calls': { text: 'Checking both.', calls: [WEATHER, { name: 'get_weather', arguments: { city: 'Zürich' } }, { name: 'read_file', arguments: { path: '/tmp/a b.txt' } }] },
  'a call split across many deltas': { calls: [{ name: 'send_email', arguments: { to: 'alice@example.com', body: 'Quarterly numbers attached.\nRegards,\n— Bob "the builder" ✓' } }], split: 60 },
  'plain text': { text: 'Nothing to call today.' },
};

for (const { format, stream } of COMBOS) {
  for (const [name, script] of Object.entries(ALLOWED)) {
    test(`${format} ${stream ? 'streamed' : 'body'}: allowed, ${name}: the same bytes as straight from the API`, async () => {
      const direct = await rawTurn(fake.url, format, script, stream);
      const gated = await rawTurn(gate.url, format, script, stream);
      assert.equal(gated.status, 200);
      assert.equal(gated.type, direct.type);
      assert.equal(gated.bytes.toString('utf8'), direct.bytes.toString('utf8'));
      assert.ok(gated.bytes.equals(direct.bytes));
      // And the SDK reads it like the direct answer.
      assert.deepEqual(await turn(gate.url, format, script, stream), await turn(fake.url, format, script, stream));
    });
  }

  test(`${format} ${stream ? 'streamed' : 'body'}: text after a held call reaches the SDK whole and the call unchanged`, async () => {
    const script: Script = { text: 'First this. ', calls: [WEATHER, { name: 'read_file', arguments: { path: '/etc/motd' } }], after: 'And that is all.' };
    const gated = await turn(gate.url, format, script, stream);
    const direct = await turn(fake.url, format, script, stream);
    assert.deepEqual(gated.calls, direct.calls);
    assert.equal(gated.finish, direct.finish);
    assert.equal(gated.text, direct.text);
  });
}

/** A refused call next to an allowed one, and the code it must be refused with. */
const REFUSALS: { code: string; call: ScriptCall; bodyless?: boolean; headers?: () => Record<string, string> }[] = [
  { code: 'undeclared_tool', call: { name: 'shell_exec', arguments: { cmd: 'id' } } },
  { code: 'undeclared_argument', call: { name: 'get_weather', arguments: { city: 'Rome', units: 'kelvin' } } },
  { code: 'argument_invalid', call: { name: 'get_weather', arguments: { city: 'R'.repeat(65) } } },
  { code: 'scope_mismatch', call: { name: 'send_email', arguments: { to: 'mallory@evil.example', body: 'hi' } } },
  { code: 'policy_denied', call: { name: 'transfer', arguments: { amount: 5000 } } },
  { code: 'approval_required', call: { name: 'delete_branch', arguments: { branch: 'main' } } },
  {
    code: 'approval_invalid',
    call: { name: 'delete_branch', arguments: { branch: 'release' } },
    headers: () => ({ 'Cloakpipe-Approval': receiptHeader(stranger, 'delete_branch', { branch: 'release' }) }),
  },
  // Arguments the strict parser refuses; a body carries Anthropic input as an object, so these are stream-only there.
  { code: 'malformed_json', call: { name: 'get_weather', raw: '{"city": "Par' }, bodyless: true },
  { code: 'duplicate_key', call: { name: 'get_weather', raw: '{"city":"Paris","City":"Rome"}' }, bodyless: true },
  { code: 'number_out_of_range', call: { name: 'transfer', raw: '{"amount": 1e400}' }, bodyless: true },
  { code: 'invalid_request', call: { name: 'get_weather', raw: '["Paris"]' }, bodyless: true },
];

function receiptHeader(key: string, tool: string, args: object): string {
  const r = cloakpipe(['approve', '--key', `${key}.key`, '--call', callFile(s as never, tool, args as Record<string, unknown>), '--context', s.context, '--yes']);
  assert.equal(r.status, 0, r.stderr);
  return Buffer.from(r.stdout.trim()).toString('base64url');
}

for (const { format, stream } of COMBOS) {
  for (const r of REFUSALS) {
    if (r.bodyless && format === 'anthropic' && !stream) continue;
    test(`${format} ${stream ? 'streamed' : 'body'}: ${r.code} removes the call, names the refusal and keeps the allowed call`, async () => {
      const before = decisions(s.home).length;
      const t = await turn(gate.url, format, { text: 'Working on it.', calls: [WEATHER, r.call] }, stream, r.headers?.() ?? {});
      assert.deepEqual(t.calls.map((c) => [c.name, c.args]), [['get_weather', { city: 'Paris' }]]);
      assert.equal(t.finish, TOOL_FINISH[format], 'one call remains: the agent runs it');
      assert.match(t.text, /^Working on it\./);
      const line = t.text.split('\n').find((l) => l.startsWith('cloakpipe refused '));
      assert.ok(line, t.text);
      assert.ok(line.startsWith(`cloakpipe refused ${r.call.name}: ${r.code}: `), line);
      const entries = decisions(s.home).slice(before);
      assert.ok(entries.some((e) => e.outcome === 'refuse' && e.reason === r.code), JSON.stringify(entries));
      assert.ok(entries.some((e) => e.outcome === 'allow' && e.tool === 'get_weather' && e.execution === 'agent'));
    });
  }

  test(`${format} ${stream ? 'streamed' : 'body'}: every call refused: no call left, the finish reason says the turn is over`, async () => {
    const t = await turn(gate.url, format, { calls: [{ name: 'transfer', arguments: { amount: 9000 } }, { name: 'shell_exec', arguments: {} }] }, stream);
    assert.deepEqual(t.calls, []);
    assert.equal(t.finish, TEXT_FINISH[format]);
    const lines = t.text.split('\n');
    assert.match(lines[0], /^cloakpipe refused transfer: policy_denied: .*no-large-transfer/);
    assert.match(lines[1], /^cloakpipe refused shell_exec: undeclared_tool: /);
  });
}

test('a receipt sent with the request approves exactly its call, once', async () => {
  const args = { branch: 'feature/old' };
  const header = { 'Cloakpipe-Approval': receiptHeader(approver, 'delete_branch', args) };
  const call = { name: 'delete_branch', arguments: args };
  const first = await turn(gate.url, 'openai', { calls: [call] }, false, header);
  assert.deepEqual(first.calls.map((c) => c.args), [args]);
  const again = await turn(gate.url, 'anthropic', { calls: [call] }, true, header);
  assert.deepEqual(again.calls, []);
  assert.match(again.text, /^cloakpipe refused delete_branch: approval_invalid: already_used/);
  const other = await turn(gate.url, 'openai', { calls: [{ name: 'delete_branch', arguments: { branch: 'main' } }] }, true, header);
  assert.match(other.text, /^cloakpipe refused delete_branch: approval_required: /, 'a receipt for another call is not this call\'s');
});

for (const { format, stream } of COMBOS) {
  test(`${format} ${stream ? 'streamed' : 'body'}: a response the gate cannot read is refused fail_closed, never passed on`, async () => {
    const before = decisions(s.home).length;
    const broken = stream
      ? format === 'openai'
        ? 'data: {"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"transfer","arguments":"{}"}}]}}]}\n\ndata: {"choices": [nope\n\n'
        : format === 'responses'
          ? 'event: response.created\ndata: {"type":"response.created","sequence_number":0,"response":{"id":"resp_1","object":"response","status":"in_progress","output":[]}}\n\nevent: response.output_item.added\ndata: {"type":"response.output_item.added","sequence_number":1,"output_index":0,"item":{"id":"fc_1","type":"function_call","status":"in_progress","arguments":"","call_id":"call_1","name":"transfer"}}\n\nevent: response.function_call_arguments.delta\ndata: {"type":"response.function_call_arguments.delta","sequence_number":2,"item_id":"fc_1","output_index":0,"delta":"{}"}\n\nevent: response.output_item.done\ndata: {"type":"response.output_item.done","sequence_number":3,"output_index":0,"item":{"id":"fc_1","type":"function_call","status":"completed","arguments":"{}","call_id":"call_1","name":"transfer","name":"send_email"}}\n\n'
          : 'event: message_start\ndata: {"type":"message_start","message":{"id":"m","type":"message","role":"assistant","content":[],"model":"x","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}}\n\nevent: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"transfer","input":{},"input":{"amount":1}}}\n\n'
      : format === 'openai'
        ? '{"id":"x","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"transfer","arguments":"{}"}}]},"finish_reason":"tool_calls"}],"choices":[]}'
        : format === 'responses'
          ? '{"id":"resp_1","object":"response","status":"completed","output":[{"id":"fc_1","type":"function_call","status":"completed","arguments":"{}","call_id":"call_1","name":"transfer"}],"output":[]}'
          : '{"id":"m","type":"message","role":"assistant","content":[{"type":"tool_use","id":"t","name":"transfer","input":{"amount":1,"amount":99999}}],"stop_reason":"tool_use"}';
    const raw = await rawTurn(gate.url, format, { rawBody: broken }, stream);
    const text = raw.bytes.toString('utf8');
    assert.ok(!text.includes('call_1') && !text.includes('toolu_1') && !text.includes('"transfer"'), text);
    assert.match(text, /cloakpipe refused the response: fail_closed: /);
    if (!stream) assert.equal(raw.status, 502);
    await assert.rejects(turn(gate.url, format, { rawBody: broken }, stream), (e: Error) => /fail_closed/.test(e.message));
    assert.ok(decisions(s.home).slice(before).some((e) => e.reason === 'fail_closed'));
  });
}

/** Requests whose calls the gate would never decide: tools the model API runs itself, a toolset, kinds of call the gate does not read. */
const UNDECIDABLE: { format: Format; what: string; extra: Record<string, unknown>; detail: RegExp }[] = [
  { format: 'anthropic', what: 'web search', extra: { tools: [...TOOLS_ANTHROPIC, { type: 'web_search_20250305', name: 'web_search', max_uses: 1 }] }, detail: /request: tools\[6\]: a tool the model API runs itself/ },
  { format: 'anthropic', what: 'web fetch', extra: { tools: [{ type: 'web_fetch_20250910', name: 'web_fetch' }, ...TOOLS_ANTHROPIC] }, detail: /request: tools\[0\]: / },
  { format: 'anthropic', what: 'code execution', extra: { tools: [...TOOLS_ANTHROPIC, { type: 'code_execution_20250825', name: 'code_execution' }] }, detail: /request: tools\[6\]: / },
  { format: 'anthropic', what: 'a toolset', extra: { tools: [...TOOLS_ANTHROPIC, { type: 'computer_toolset_20260801', name: 'computer' }] }, detail: /request: tools\[6\]: .*or a toolset/ },
  { format: 'anthropic', what: 'the MCP connector', extra: { mcp_servers: [{ type: 'url', url: 'https://mcp.example.com/sse', name: 'tickets' }] }, detail: /request: mcp_servers: the model API would call those servers itself/ },
  { format: 'openai', what: 'web search', extra: { web_search_options: {} }, detail: /request: web_search_options: / },
  { format: 'openai', what: 'a custom tool', extra: { tools: [...TOOLS_OPENAI, { type: 'custom', custom: { name: 'delete_branch' } }] }, detail: /request: tools\[6\]: not of type function/ },
  { format: 'responses', what: 'web search', extra: { tools: [...TOOLS_RESPONSES, { type: 'web_search' }] }, detail: /request: tools\[6\]: not of type function: the model API runs it itself/ },
  { format: 'responses', what: 'a remote MCP server', extra: { tools: [{ type: 'mcp', server_label: 'tickets', server_url: 'https://mcp.example.com/mcp', require_approval: 'never' }, ...TOOLS_RESPONSES] }, detail: /request: tools\[0\]: not of type function/ },
  { format: 'responses', what: 'file search', extra: { tools: [...TOOLS_RESPONSES, { type: 'file_search', vector_store_ids: ['vs_1'] }] }, detail: /request: tools\[6\]: / },
  { format: 'responses', what: 'the code interpreter', extra: { tools: [...TOOLS_RESPONSES, { type: 'code_interpreter', container: { type: 'auto' } }] }, detail: /request: tools\[6\]: / },
  { format: 'responses', what: 'a custom tool', extra: { tools: [...TOOLS_RESPONSES, { type: 'custom', name: 'delete_branch' }] }, detail: /request: tools\[6\]: / },
  { format: 'responses', what: 'local shell', extra: { tools: [...TOOLS_RESPONSES, { type: 'local_shell' }] }, detail: /request: tools\[6\]: / },
  { format: 'responses', what: 'a stored prompt', extra: { prompt: { id: 'pmpt_123', version: '2' } }, detail: /request: prompt: a stored prompt can bring tools/ },
  { format: 'responses', what: 'a background response', extra: { background: true }, detail: /request: background: / },
  { format: 'openai', what: 'legacy functions', extra: { functions: [{ name: 'transfer', parameters: { type: 'object', properties: {} } }] }, detail: /request: functions: / },
];

function sdkRequest(base: string, format: Format, extra: Record<string, unknown>): Promise<unknown> {
  const script: Script = { calls: [WEATHER] };
  if (format === 'responses') return openaiAgent(base).responses.create({ ...responsesParams(script, false), ...extra } as never);
  return format === 'openai'
    ? openaiAgent(base).chat.completions.create({ ...openaiParams(script, false), ...extra } as never)
    : anthropicAgent(base).messages.create({ ...anthropicParams(script, false), ...extra } as never);
}

for (const c of UNDECIDABLE) {
  test(`${c.format}: a request for ${c.what}, whose calls the gate would never decide, is refused fail_closed and never reaches the API`, async () => {
    // Straight to the API the request goes through: the refusal is the gate's.
    const direct = fake.seen.length;
    await sdkRequest(fake.url, c.format, c.extra);
    assert.equal(fake.seen.length, direct + 1);
    const before = decisions(s.home).length;
    const seen = fake.seen.length;
    await assert.rejects(sdkRequest(gate.url, c.format, c.extra), (e: Error & { status?: number }) => {
      assert.equal(e.status, 400);
      assert.match(e.message, /cloakpipe refused the request: fail_closed: /);
      assert.match(e.message, c.detail);
      return true;
    });
    assert.equal(fake.seen.length, seen, 'nothing reached the model API');
    assert.ok(decisions(s.home).slice(before).some((e) => e.outcome === 'refuse' && e.reason === 'fail_closed'));
  });
}

test('anthropic: the tools Anthropic defines for the agent to run are forwarded, and their calls decided by name', async () => {
  const clientTools = [
    { type: 'bash_20250124', name: 'bash' },
    { type: 'text_editor_20250728', name: 'str_replace_based_edit_tool' },
    { type: 'memory_20250818', name: 'memory' },
    { type: 'computer_20251124', name: 'computer', display_width_px: 1024, display_height_px: 768 },
    { type: 'custom', name: 'lookup', input_schema: { type: 'object', properties: {} } },
  ];
  const seen = fake.seen.length;
  const m = await anthropicAgent(gate.url).messages.create({ ...anthropicParams({ calls: [WEATHER, { name: 'bash', arguments: { command: 'rm -rf /srv' } }] }, false), tools: [...TOOLS_ANTHROPIC, ...clientTools] } as never);
  assert.equal(fake.seen.length, seen + 1);
  assert.deepEqual(fake.seen.at(-1)!.body.tools.slice(6), clientTools, 'forwarded as sent');
  assert.deepEqual(m.content.flatMap((b) => (b.type === 'tool_use' ? [b.name] : [])), ['get_weather']);
  assert.match(m.content.map((b) => (b.type === 'text' ? b.text : '')).join(''), /cloakpipe refused bash: undeclared_tool: /);
});

test('anthropic, an AI SDK agent: its provider-run web search is refused before the model API, as an error the agent reads', async () => {
  const provider = createAnthropic({ baseURL: `${gate.url}/v1`, apiKey: API_KEY });
  const seen = fake.seen.length;
  await assert.rejects(
    generateText({ model: provider('claude-sonnet-5-5'), prompt: JSON.stringify({ calls: [WEATHER] }), tools: { web_search: provider.tools.webSearch_20250305({ maxUses: 1 }) }, maxRetries: 0 }),
    /cloakpipe refused the request: fail_closed: request: tools\[0\]: /,
  );
  assert.equal(fake.seen.length, seen);
});

/** A message where the API ran a web search itself: a server_tool_use block and its result. */
const SERVER_RAN = {
  body: '{"id":"msg_srv","type":"message","role":"assistant","model":"claude-sonnet-5-5","content":[{"type":"server_tool_use","id":"srvtoolu_01","name":"web_search","input":{"query":"q"}},{"type":"web_search_tool_result","tool_use_id":"srvtoolu_01","content":[]},{"type":"text","text":"Found nothing."}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":9}}',
  stream: [
    'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_srv","type":"message","role":"assistant","model":"claude-sonnet-5-5","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":1}}}\n\n',
    'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"server_tool_use","id":"srvtoolu_01","name":"web_search","input":{}}}\n\n',
    'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\\"query\\":\\"q\\"}"}}\n\n',
    'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n',
    'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":9}}\n\n',
    'event: message_stop\ndata: {"type":"message_stop"}\n\n',
  ].join(''),
};

for (const stream of [false, true]) {
  test(`anthropic ${stream ? 'streamed' : 'body'}: a block of a tool the model API ran is refused fail_closed, never passed on`, async () => {
    const rawBody = stream ? SERVER_RAN.stream : SERVER_RAN.body;
    // The SDK reads it straight from the API: the response is one an agent would take.
    const params = anthropicParams({ rawBody }, false) as Anthropic.MessageCreateParamsNonStreaming;
    const m = stream ? await anthropicAgent(fake.url).messages.stream(params).finalMessage() : await anthropicAgent(fake.url).messages.create(params);
    assert.equal(m.content[0].type, 'server_tool_use');
    const before = decisions(s.home).length;
    const raw = await rawTurn(gate.url, 'anthropic', { rawBody }, stream);
    const text = raw.bytes.toString('utf8');
    assert.ok(!text.includes('srvtoolu_01'), text);
    assert.match(text, /cloakpipe refused the response: fail_closed: /);
    if (!stream) assert.equal(raw.status, 502);
    assert.ok(decisions(s.home).slice(before).some((e) => e.reason === 'fail_closed'));
  });
}

test('a stream cut in the middle of a call never releases it', async () => {
  for (const format of ['openai', 'responses', 'anthropic'] as const) {
    // Cut after two of the four argument pieces.
    const script: Script = { text: 'Sure.', calls: [{ name: 'transfer', arguments: { amount: 10 }, id: 'call_cut_in_half' }], split: 4, cutAfter: { openai: 8, responses: 13, anthropic: 10 }[format] };
    const raw = await rawTurn(gate.url, format, script, true);
    const text = raw.bytes.toString('utf8');
    assert.ok(!text.includes('call_cut_in_half'), text);
    assert.match(text, /cloakpipe refused transfer: malformed_json: /);
  }
});

test('only the headers the model API needs reach it; the API key does', async () => {
  await turn(gate.url, 'openai', { text: 'hi' }, false, { Cookie: 'session=abc', 'Proxy-Authorization': 'Bearer gate-token-0123456789', 'Cloakpipe-Approval': 'e30' });
  const h = fake.seen.at(-1)!.headers;
  assert.equal(h.authorization, 'Bearer sk-test-agent-key-0123456789');
  for (const gone of ['cookie', 'proxy-authorization', 'cloakpipe-approval']) assert.equal(h[gone], undefined, gone);
  // A beta flag reaches the API: what a beta adds comes back as blocks the gate reads or refuses
  // (ADR 062), and the requests that would have the API run tools itself are refused.
  await turn(gate.url, 'anthropic', { text: 'hi' }, false, { 'anthropic-beta': 'token-efficient-tools-2025-02-19', 'X-Other': 'kept-here' });
  const a = fake.seen.at(-1)!.headers;
  assert.equal(a['anthropic-beta'], 'token-efficient-tools-2025-02-19');
  assert.equal(a['x-other'], undefined);
  // This SDK sends its key as a bearer token (older ones as x-api-key): whichever it is, it arrives.
  assert.match(String(a['x-api-key'] ?? a.authorization), /sk-test-agent-key-0123456789$/);
  assert.match(String(a['anthropic-version']), /^\d{4}-\d{2}-\d{2}$/);
  assert.equal(a['x-stainless-lang'], undefined);
});

test('a request from a browser (an Origin, a rebound page) is refused before it is read; nothing reaches the model', async () => {
  const before = fake.seen.length;
  const entries = decisions(s.home).length;
  for (const origin of ['http://evil.example:8933', 'null', `http://127.0.0.1:${new URL(gate.url).port}`]) {
    const r = await fetch(`${gate.url}/v1/chat/completions`, { method: 'POST', body: JSON.stringify(openaiParams({ text: 'hi' }, false)), headers: { 'content-type': 'application/json', origin, authorization: `Bearer ${API_KEY}` } });
    assert.equal(r.status, 403, origin);
    assert.equal(r.headers.get('access-control-allow-origin'), null);
    assert.match(JSON.stringify(await r.json()), /Origin header/);
  }
  const preflight = await fetch(`${gate.url}/v1/chat/completions`, { method: 'OPTIONS', headers: { origin: 'http://evil.example', 'access-control-request-method': 'POST' } });
  assert.equal(preflight.status, 403);
  assert.equal(fake.seen.length, before);
  assert.equal(decisions(s.home).length, entries);
});

test('other paths are not served: nothing reaches the model ungated', async () => {
  const before = fake.seen.length;
  for (const path of ['/v1/responses/resp_1/cancel', '/v1/responses/input_tokens', '/v1/completions', '/v1/models', '/v1/messages/batches']) {
    const r = await fetch(`${gate.url}${path}`, { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } });
    assert.equal(r.status, 404, path);
  }
  assert.equal(fake.seen.length, before);
});


test('a model API that redirects: the gate does not follow, so the body and the key go nowhere else', async () => {
  const elsewhere: IncomingHttpHeaders[] = [];
  const other = await listenLocal(createServer((req, res) => (elsewhere.push(req.headers), res.end('{}'))));
  const redirecting = await listenLocal(createServer((req, res) => (res.writeHead(307, { location: `${other.url}${req.url}` }), res.end())));
  const g = await startLlmGate(s, redirecting.url);
  try {
    for (const format of ['openai', 'anthropic'] as const) {
      const sent = format === 'openai' ? openaiAgent(g.url).chat.completions.create(openaiParams({ text: 'hi' }, false)) : anthropicAgent(g.url).messages.create(anthropicParams({ text: 'hi' }, false));
      await assert.rejects(sent, (e: { status?: number; message?: string }) => e.status === 502 && /redirect, which the gate does not follow/.test(String(e.message)), format);
    }
  } finally {
    await g.stop();
    await redirecting.close();
    await other.close();
  }
  assert.deepEqual(elsewhere, [], 'nothing reached the address the redirect named');
});
