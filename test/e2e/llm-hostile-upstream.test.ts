// The LLM door against a model API that sends on purpose what the gate might pass on unread: a
// stream event the gate treats as "nothing to decide" (an error chunk, an event with no item
// place, a __proto__ member) that the agent's SDK reads as a call all the same. Straight from
// the fake API each stream gives the official SDK a call to an undeclared tool (the positive
// control); through the gate the SDK holds no call the gate did not decide, and the ledger has
// the refusal. And one that gives two calls one id, so that the result the agent sends back
// under it could be taken for the wrong call's.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import type { FakeModel } from '../helpers/fake-model.js';
import { API_KEY, closeLlmWorld, openLlmWorld, openaiAgent, anthropicAgent, llmSetup, startLlmGate } from '../helpers/llm-gate.js';
import { type LlmGate, type LlmSetup } from '../helpers/llm-gate.js';
import { anthropicParams, anthropicTurn, openaiParams, openaiTurn, responsesParams } from '../helpers/llm-agent.js';
import { decisions, ledgerOf } from '../helpers/support-desk.js';

let fake: FakeModel;
let s: LlmSetup;
let gate: LlmGate;

before(async () => void ({ fake, s, gate } = await openLlmWorld()));
after(() => closeLlmWorld(fake, gate));

/** The calls the official SDK's final completion holds, by name. */
async function chatCalls(base: string, events: string): Promise<string[]> {
  const { stream: _s, ...params } = openaiParams({ rawBody: events }, true);
  try {
    const c = await openaiAgent(base).chat.completions.stream(params).finalChatCompletion();
    return (c.choices[0]?.message.tool_calls ?? []).map((t) => (t.type === 'function' ? t.function.name : t.type));
  } catch {
    return [];
  }
}

/** The call items the official SDK's final response holds, by name. */
async function responsesCalls(base: string, events: string): Promise<string[]> {
  const { stream: _s, ...params } = responsesParams({ rawBody: events }, true);
  try {
    const r = await openaiAgent(base).responses.stream(params).finalResponse();
    return r.output.flatMap((i) => (i.type === 'function_call' ? [i.name] : []));
  } catch {
    return [];
  }
}

const CHUNK = { id: 'chatcmpl-hostile', object: 'chat.completion.chunk', created: 1764547200, model: 'gpt-4o-2024-08-06' };
const SHELL_FRAGMENT = { index: 0, id: 'call_hostile', type: 'function', function: { name: 'shell_exec', arguments: '{"cmd":"id"}' } };

// The SDK raises a chunk's `error` only when it is truthy: with null (or false, 0, '') it reads the chunk's choices.
for (const error of [null, false, 0, '']) {
  test(`openai stream: a chunk with calls and "error": ${JSON.stringify(error)} is decided like any chunk`, async () => {
    const events = `data: ${JSON.stringify({ ...CHUNK, error, choices: [{ index: 0, delta: { role: 'assistant', content: null, tool_calls: [SHELL_FRAGMENT] }, logprobs: null, finish_reason: 'tool_calls' }] })}\n\ndata: [DONE]\n\n`;
    assert.deepEqual(await chatCalls(fake.url, events), ['shell_exec'], 'positive control');
    const before = decisions(s.home).length;
    assert.deepEqual(await chatCalls(gate.url, events), []);
    const made = decisions(s.home).slice(before);
    assert.ok(made.some((e) => e.outcome === 'refuse' && e.reason === 'undeclared_tool'), JSON.stringify(made));
  });
}

const RESPONSE = { id: 'resp_hostile', object: 'response', created_at: 1764547200, status: 'in_progress', model: 'gpt-4.1-2025-04-14', output: [], parallel_tool_calls: true, tool_choice: 'auto', tools: [], usage: null };
const SHELL_ITEM = { id: 'fc_hostile', type: 'function_call', status: 'completed', arguments: '{"cmd":"id"}', call_id: 'call_hostile', name: 'shell_exec' };
const responsesSse = (events: Record<string, unknown>[]) => events.map((e, i) => `event: ${e.type}\ndata: ${JSON.stringify({ ...e, sequence_number: i })}\n\n`).join('');

/** Straight to the fake API the agent holds shell_exec (the positive control); through the gate no call, and a fail_closed refusal recorded. */
async function refusedFailClosed(agentCalls: (url: string) => Promise<string[]>): Promise<void> {
  assert.deepEqual(await agentCalls(fake.url), ['shell_exec'], 'positive control');
  const before = decisions(s.home).length;
  assert.deepEqual(await agentCalls(gate.url), []);
  const made = decisions(s.home).slice(before);
  assert.ok(made.some((e) => e.outcome === 'refuse' && e.reason === 'fail_closed'), JSON.stringify(made));
}

test('responses stream: an item added without an output_index (the SDK appends it) is refused, never passed on', async () => {
  // No final event: the SDK's response is its snapshot, which holds every item added.
  const events = responsesSse([
    { type: 'response.created', response: RESPONSE },
    { type: 'response.output_item.added', item: SHELL_ITEM },
  ]);
  await refusedFailClosed((url) => responsesCalls(url, events));
});

test('openai stream: a delta whose __proto__ member holds calls (the SDK merges it into the message as its prototype) is refused', async () => {
  const calls = { tool_calls: [{ id: 'call_proto', type: 'function', function: { name: 'shell_exec', arguments: '{"cmd":"id"}' } }] };
  // JSON.stringify cannot write a __proto__ key: it is named PROTO and renamed in the text.
  const delta = JSON.stringify({ ...CHUNK, choices: [{ index: 0, delta: { role: 'assistant', content: null, PROTO: calls }, logprobs: null, finish_reason: null }] }).replace('"PROTO":', '"__proto__":');
  const events = `data: ${delta}\n\ndata: ${JSON.stringify({ ...CHUNK, choices: [{ index: 0, delta: {}, logprobs: null, finish_reason: 'tool_calls' }] })}\n\ndata: [DONE]\n\n`;
  await refusedFailClosed((url) => chatCalls(url, events));
});

test('two calls under one id (a confidential read and the weather, or a write): the result sent back under it raises the label by the read, whichever it is, and is recorded as neither call\'s', async () => {
  const post = { calls: [{ name: 'post_public', arguments: { text: 'alice,100' } }] };
  const read = { name: 'read_file', arguments: { path: '/srv/payroll.csv' }, id: 'call_twice' };
  const weather = { name: 'get_weather', arguments: { city: 'Paris' }, id: 'call_twice' };
  const transfer = { name: 'transfer', arguments: { amount: 5 }, id: 'call_twice' };
  // Each case on a gate of its own: the label is the session's.
  const cases = [
    { format: 'openai', calls: [read, weather], stream: false },
    { format: 'openai', calls: [weather, read], stream: true },
    { format: 'anthropic', calls: [read, weather], stream: true },
    { format: 'anthropic', calls: [transfer, read], stream: false },
  ] as const;
  for (const c of cases) {
    const own = llmSetup();
    const g = await startLlmGate(own, fake.url);
    try {
      if (c.format === 'openai') {
        const agent = openaiAgent(g.url);
        const t = await openaiTurn(agent, { calls: [...c.calls] }, c.stream);
        assert.deepEqual(t.calls.map((x) => x.name), c.calls.map((x) => x.name), 'both allowed');
        const history = [
          { role: 'user', content: JSON.stringify({ calls: [] }) },
          { role: 'assistant', content: null, tool_calls: c.calls.map((x) => ({ id: x.id, type: 'function', function: { name: x.name, arguments: JSON.stringify(x.arguments) } })) },
          ...c.calls.map((x) => ({ role: 'tool', tool_call_id: x.id, content: x.name === 'read_file' ? 'name,salary\nalice,100' : 'sunny' })),
        ];
        const refused = await openaiTurn(agent, post, c.stream, { messages: history });
        assert.deepEqual(refused.calls, [], `${c.format} ${c.calls[0].name} first`);
        assert.match(refused.text, /^cloakpipe refused post_public: sink_ceiling_exceeded: /);
      } else {
        const agent = anthropicAgent(g.url);
        const t = await anthropicTurn(agent, { calls: [...c.calls] }, c.stream);
        assert.deepEqual(t.calls.map((x) => x.name), c.calls.map((x) => x.name), 'both allowed');
        const history = [
          { role: 'user', content: JSON.stringify({ calls: [] }) },
          { role: 'assistant', content: c.calls.map((x) => ({ type: 'tool_use', id: x.id, name: x.name, input: x.arguments })) },
          { role: 'user', content: c.calls.map((x) => ({ type: 'tool_result', tool_use_id: x.id, content: x.name === 'read_file' ? 'name,salary\nalice,100' : 'sunny' })) },
        ];
        const refused = await anthropicTurn(agent, post, c.stream, { messages: history });
        assert.deepEqual(refused.calls, [], c.format);
        assert.match(refused.text, /^cloakpipe refused post_public: sink_ceiling_exceeded: /);
      }
    } finally {
      await g.stop();
    }
    const entries = ledgerOf(own.home);
    const labels = entries.filter((e) => e.kind === 'label');
    assert.deepEqual(labels.map((e) => [e.from, e.to, e.tool]), [['public', 'confidential', 'read_file']]);
    // Which call the one result was is not known: neither is settled ok with it (a write's result would be another call's).
    const shared = entries.filter((e) => e.kind === 'decision' && e.outcome === 'allow' && e.tool !== 'post_public').map((e) => e.seq);
    const settled = entries.filter((e) => e.kind === 'result' && shared.includes(e.decision));
    assert.deepEqual(settled.map((e) => [e.outcome, e.why, e.result_digest]), [['unknown', 'unattributed', undefined], ['unknown', 'unattributed', undefined]], `${c.format} ${c.calls[0].name} first`);
  }
});

test('a task context that does not load, with a receipt sent along: each proposed call is refused fail_closed and recorded, body or stream', async () => {
  const own = llmSetup();
  const g = await startLlmGate(own, fake.url);
  try {
    // Any receipt: the door makes the call's fingerprint (under the task id) to find the one bound to it.
    const agent = openaiAgent(g.url, { 'Cloakpipe-Approval': Buffer.from('{"fingerprint":"sha256:00"}').toString('base64url') });
    const weather = { calls: [{ name: 'get_weather', arguments: { city: 'Paris' } }] };
    await openaiTurn(agent, { text: 'hello' }, false); // the agent's session opens under the context
    writeFileSync(own.context, '{ not json');
    for (const stream of [false, true]) {
      const t = await openaiTurn(agent, weather, stream);
      assert.deepEqual(t.calls, []);
      assert.match(t.text, /^cloakpipe refused get_weather: fail_closed: /);
    }
  } finally {
    await g.stop();
  }
  const made = decisions(own.home);
  assert.deepEqual(made.map((e) => [e.tool, e.outcome, e.reason]), [['get_weather', 'refuse', 'fail_closed'], ['get_weather', 'refuse', 'fail_closed']]);
});

test('anthropic stream: a message started again while calls of the first are being decided: a call that never reached the agent ends not_forwarded in the ledger', { timeout: 120_000 }, async () => {
  const own = llmSetup();
  const g = await startLlmGate(own, fake.url);
  const ev = (o: Record<string, unknown>) => `event: ${o.type}\ndata: ${JSON.stringify(o)}\n\n`;
  const start = ev({ type: 'message_start', message: { id: 'msg_again', type: 'message', role: 'assistant', model: 'claude-sonnet-5-5', content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 1, output_tokens: 1 } } });
  // Many calls: the later ones are still being decided when the stream ends.
  const CALLS = 30;
  const block = (i: number) => [
    ev({ type: 'content_block_start', index: i, content_block: { type: 'tool_use', id: `toolu_again_${i}_`, name: 'get_weather', input: {} } }),
    ev({ type: 'content_block_delta', index: i, delta: { type: 'input_json_delta', partial_json: '{"city":"Paris"}' } }),
    ev({ type: 'content_block_stop', index: i }),
  ];
  const events = [start, ...Array.from({ length: CALLS }, (_, i) => block(i)).flat(), start].join('');
  let received: string;
  try {
    const r = await fetch(`${g.url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': API_KEY, 'anthropic-version': '2023-06-01' },
      body: JSON.stringify(anthropicParams({ rawBody: events }, true)),
    });
    received = await r.text();
  } finally {
    await g.stop();
  }
  const out = Array.from({ length: CALLS }, (_, i) => i).filter((i) => received.includes(`toolu_again_${i}_`)).length;
  const entries = ledgerOf(own.home);
  const allowed = entries.filter((e) => e.kind === 'decision' && e.tool === 'get_weather' && e.outcome === 'allow').map((e) => e.seq);
  assert.equal(allowed.length, CALLS);
  const results = entries.filter((e) => e.kind === 'result' && allowed.includes(e.decision)).map((e) => e.outcome);
  // A call the agent got may have run (unknown: no result came back); one it never got did not.
  assert.deepEqual([results.filter((o) => o === 'unknown').length, results.filter((o) => o === 'not_forwarded').length], [out, CALLS - out], received);
});

test('a task context that does not load at an agent\'s first request: the request is refused fail_closed and recorded, never forwarded', async () => {
  const own = llmSetup();
  const g = await startLlmGate(own, fake.url);
  writeFileSync(own.context, '{ not json'); // after start-up, which reads it
  const seen = fake.seen.length;
  const weather = { calls: [{ name: 'get_weather', arguments: { city: 'Paris' } }] };
  try {
    await assert.rejects(openaiTurn(openaiAgent(g.url), weather, false), (e: { status?: number; error?: { code?: string } }) => e.status === 400 && e.error?.code === 'fail_closed');
    await assert.rejects(anthropicTurn(anthropicAgent(g.url), weather, true), (e: { status?: number }) => e.status === 400);
  } finally {
    await g.stop();
  }
  assert.equal(fake.seen.length, seen, 'not forwarded');
  assert.deepEqual(decisions(own.home).map((e) => [e.outcome, e.reason]), [['refuse', 'fail_closed'], ['refuse', 'fail_closed']]);
});
