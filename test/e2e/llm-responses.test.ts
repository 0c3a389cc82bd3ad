// The LLM door on the OpenAI Responses API, where llm-proxy.test.ts does not reach: a tool
// result sent back as a function_call_output item, and streams no real API sends, made to give
// an agent a call other than the one the gate decides. The official SDK keeps a snapshot that
// each item's output_item.done replaces, and that the final event (or an in-progress one)
// replaces whole; so the same call reaches it up to four ways. Straight from the fake API each
// stream makes the SDK hold a call nobody decided (the positive control); through the gate,
// the official SDK, the AI SDK and LangChain (both on the Responses API) run nothing but what
// the gate allowed. Then the same property over random streams (arguments cut anywhere, empty
// deltas, streams that stop early, and now and then one of the misleading changes).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { FakeModel } from '../helpers/fake-model.js';
import { closeLlmWorld, openLlmWorld, openaiAgent, type LlmGate, type LlmSetup } from '../helpers/llm-gate.js';
import { responsesParams, responsesTurn } from '../helpers/llm-agent.js';
import { aiSdkTurn } from '../helpers/ai-sdk-agent.js';
import { langchainTurn } from '../helpers/langchain-agent.js';
import { decisions, ledgerOf } from '../helpers/support-desk.js';
import { argsText, assertAllowed, CALLS, cuts, nextSeq, rng } from '../helpers/llm-random.js';

let fake: FakeModel;
let s: LlmSetup;
let gate: LlmGate;

before(async () => void ({ fake, s, gate } = await openLlmWorld()));
after(() => closeLlmWorld(fake, gate));

test('a function_call_output sent back settles its call once and raises the label; the next proposal is decided under it', async () => {
  const agent = openaiAgent(gate.url);
  const read = await responsesTurn(agent, { calls: [{ name: 'read_file', arguments: { path: '/srv/payroll.csv' } }] }, true);
  assert.equal(read.calls.length, 1);
  const history = [
    { role: 'user', content: JSON.stringify({ calls: [] }) },
    { type: 'function_call', call_id: read.calls[0].id, name: 'read_file', arguments: '{"path":"/srv/payroll.csv"}' },
    { type: 'function_call_output', call_id: read.calls[0].id, output: 'name,salary\nalice,100' },
  ];
  const post = { calls: [{ name: 'post_public', arguments: { text: 'status: green' } }] };
  const refused = await responsesTurn(agent, post, false, { messages: history });
  assert.deepEqual(refused.calls, []);
  assert.match(refused.text, /^cloakpipe refused post_public: sink_ceiling_exceeded: /);
  // The same history again settles nothing twice.
  await responsesTurn(agent, { text: 'ok' }, true, { messages: history });
  const entries = ledgerOf(s.home);
  const d = entries.find((e) => e.kind === 'decision' && e.tool === 'read_file')!;
  const results = entries.filter((e) => e.kind === 'result' && e.decision === d.seq);
  assert.deepEqual(results.map((e) => e.outcome), ['ok']);
  assert.deepEqual(entries.filter((e) => e.kind === 'label').map((e) => [e.from, e.to, e.tool]), [['public', 'confidential', 'read_file']]);
});

// ── streams made to mislead ─────────────────────────────────────────────────────────────────

const RESPONSE = { id: 'resp_h1', object: 'response', created_at: 1764547200, status: 'in_progress', model: 'gpt-4.1-2025-04-14', output: [], parallel_tool_calls: true, tool_choice: 'auto', tools: [], usage: null };
const SMALL = '{"amount":10}';
const LARGE = '{"amount":99999}'; // the policy forbids a transfer over 1000

const fc = (args: string, o: Record<string, unknown> = {}) => ({ id: 'fc_h1', type: 'function_call', status: 'completed', arguments: args, call_id: 'call_h1', name: 'transfer', ...o });
const message = (text: string) => ({ id: 'msg_h1', type: 'message', status: 'completed', role: 'assistant', content: [{ type: 'output_text', annotations: [], text }] });
const created = { type: 'response.created', response: RESPONSE };
const completed = (output: unknown[]) => ({ type: 'response.completed', response: { ...RESPONSE, status: 'completed', output } });

/** One function call item's events: added, its argument deltas, the arguments done, the item done. */
function call(index: number, deltas: string[], o: { done?: string; item?: object } = {}) {
  const item = fc(deltas.join(''));
  return [
    { type: 'response.output_item.added', output_index: index, item: { ...item, status: 'in_progress', arguments: '' } },
    ...deltas.map((delta) => ({ type: 'response.function_call_arguments.delta', item_id: 'fc_h1', output_index: index, delta })),
    { type: 'response.function_call_arguments.done', item_id: 'fc_h1', output_index: index, arguments: o.done ?? item.arguments },
    { type: 'response.output_item.done', output_index: index, item: o.item ?? item },
  ];
}

function text(index: number, t: string, doneItem: object = message(t)) {
  return [
    { type: 'response.output_item.added', output_index: index, item: { ...message(t), status: 'in_progress', content: [] } },
    { type: 'response.content_part.added', item_id: 'msg_h1', output_index: index, content_index: 0, part: { type: 'output_text', annotations: [], text: '' } },
    { type: 'response.output_text.delta', item_id: 'msg_h1', output_index: index, content_index: 0, delta: t },
    { type: 'response.output_item.done', output_index: index, item: doneItem },
  ];
}

const sse = (events: Record<string, unknown>[]) => events.map((e, i) => `event: ${e.type}\ndata: ${JSON.stringify({ ...e, sequence_number: i })}\n\n`).join('');

const MISLEADING: { name: string; events: Record<string, unknown>[] }[] = [
  { name: 'the arguments done are not the deltas', events: [created, ...call(0, ['{"amount":', '10}'], { done: LARGE, item: fc(LARGE) }), completed([fc(LARGE)])] },
  // No final event in these two: the SDK's response is the snapshot the item done left.
  { name: 'the item done carries other arguments', events: [created, ...call(0, [SMALL], { item: fc(LARGE) })] },
  { name: 'the item done names another tool', events: [created, ...call(0, [SMALL], { item: fc(SMALL, { name: 'delete_branch' }) })] },
  { name: 'the final response carries other arguments', events: [created, ...call(0, [SMALL]), completed([fc(LARGE)])] },
  { name: 'the final response carries a call never streamed', events: [created, ...text(0, 'Done.'), completed([message('Done.'), fc(LARGE)])] },
  { name: 'an in-progress event brings a call', events: [created, { type: 'response.in_progress', response: { ...RESPONSE, output: [fc(LARGE)] } }] },
  // No final event, as above.
  { name: 'a message item ends as a function call', events: [created, ...text(0, 'x', fc(LARGE))] },
  {
    // The SDK keeps items in the order they are added, whatever their output_index says.
    name: 'items added out of order',
    events: [
      created,
      { type: 'response.output_item.added', output_index: 1, item: { ...message('x'), status: 'in_progress', content: [] } },
      { type: 'response.output_item.added', output_index: 0, item: { ...fc(''), status: 'in_progress' } },
      { type: 'response.output_item.done', output_index: 0, item: fc(LARGE) },
    ],
  },
  { name: 'a call added after the response completed', events: [created, completed([]), ...call(0, [LARGE])] },
  {
    name: 'an item of a tool the model API ran',
    events: [
      created,
      { type: 'response.output_item.added', output_index: 0, item: { id: 'mcp_h1', type: 'mcp_call', status: 'in_progress', server_label: 'bank', name: 'transfer', arguments: LARGE } },
      { type: 'response.output_item.done', output_index: 0, item: { id: 'mcp_h1', type: 'mcp_call', status: 'completed', server_label: 'bank', name: 'transfer', arguments: LARGE, output: 'ok' } },
      completed([{ id: 'mcp_h1', type: 'mcp_call', status: 'completed', server_label: 'bank', name: 'transfer', arguments: LARGE, output: 'ok' }]),
    ],
  },
];

/** What the official SDK's final response holds: every call-like item, by type, name and arguments. */
async function officialReads(base: string, events: string): Promise<{ calls: string[]; error?: string }> {
  const { stream: _s, ...params } = responsesParams({ rawBody: events }, true);
  try {
    const r = await openaiAgent(base).responses.stream(params).finalResponse();
    return { calls: r.output.filter((i) => i.type !== 'message' && i.type !== 'reasoning').map((i) => `${i.type} ${(i as { name?: string }).name} ${(i as { arguments?: string }).arguments}`) };
  } catch (e) {
    return { calls: [], error: (e as Error).message };
  }
}

for (const m of MISLEADING) {
  test(`responses streamed: ${m.name}: straight, the SDK holds a call nobody decided; through the gate no agent runs it`, async () => {
    const events = sse(m.events);
    const straight = await officialReads(fake.url, events);
    assert.ok(straight.calls.some((c) => c.includes('99999') || c.includes('delete_branch')), `positive control: ${JSON.stringify(straight)}`);
    const before = decisions(s.home).length;
    const official = await officialReads(gate.url, events);
    assert.deepEqual(official.calls, [], JSON.stringify(official));
    for (const reader of [aiSdkTurn, langchainTurn]) {
      const t = await reader(gate.url, 'responses', { rawBody: events }, true);
      const ran = 'ran' in t ? t.ran : t.calls;
      assert.deepEqual(ran, [], `${reader.name}: ${JSON.stringify(t)}`);
    }
    const made = decisions(s.home).slice(before);
    assert.ok(made.some((e) => e.reason === 'fail_closed'), JSON.stringify(made));
    assert.ok(!made.some((e) => e.outcome === 'allow' && e.tool === 'delete_branch'));
  });
}

/**
 * A reader of the raw events, as OpenAI's streaming examples read a call: the item from its
 * output_item.added, by output_index, and its arguments from function_call_arguments.done. It
 * runs each call whose arguments are done, whatever the item done and the final event say.
 */
async function doneReader(base: string, events: string): Promise<string[]> {
  const { stream: _s, ...params } = responsesParams({ rawBody: events }, true);
  const items = new Map<number, { name: string }>();
  const ran: string[] = [];
  try {
    for await (const e of await openaiAgent(base).responses.create({ ...params, stream: true })) {
      if (e.type === 'response.output_item.added' && e.item.type === 'function_call') items.set(e.output_index, { name: e.item.name });
      if (e.type === 'response.function_call_arguments.done') ran.push(`${items.get(e.output_index)?.name} ${e.arguments}`);
    }
  } catch {
    // the gate failed the stream: what ran before stands
  }
  return ran;
}

test('responses streamed: only function_call_arguments.done says other arguments: straight, a reader of that event runs them; through the gate no reader does', async () => {
  const events = sse([created, ...call(0, ['{"amount":', '10}'], { done: LARGE }), completed([fc(SMALL)])]);
  assert.deepEqual(await doneReader(fake.url, events), [`transfer ${LARGE}`], 'positive control');
  assert.deepEqual((await officialReads(fake.url, events)).calls, [`function_call transfer ${SMALL}`], "the SDK's snapshot holds the deltas' arguments");
  const before = decisions(s.home).length;
  assert.deepEqual(await doneReader(gate.url, events), []);
  assert.deepEqual((await officialReads(gate.url, events)).calls, []);
  const made = decisions(s.home).slice(before);
  assert.ok(made.length > 0 && made.every((e) => e.reason === 'fail_closed'), JSON.stringify(made));
});

test('responses streamed: an allowed call after a refused one keeps its place, and every reader runs it alone', async () => {
  const script = { text: 'Two transfers.', calls: [{ name: 'transfer', arguments: { amount: 5000 } }, { name: 'transfer', arguments: { amount: 10 } }], after: 'Sent.' };
  const official = await responsesTurn(openaiAgent(gate.url), script, true);
  assert.deepEqual(official.calls.map((c) => c.args), [{ amount: 10 }]);
  // The refusal stands where the call stood: between the text before and the text after.
  assert.match(official.text, /^Two transfers\.\ncloakpipe refused transfer: policy_denied: [^\n]*no-large-transfer[^\n]*Sent\.$/);
  for (const stream of [false, true]) {
    const ai = await aiSdkTurn(gate.url, 'responses', script, stream);
    assert.deepEqual(ai.ran.map((r) => r.args), [{ amount: 10 }], `AI SDK, stream ${stream}: ${JSON.stringify(ai)}`);
    const lc = await langchainTurn(gate.url, 'responses', script, stream);
    assert.deepEqual(lc.calls.map((c) => c.args), [{ amount: 10 }], `LangChain, stream ${stream}: ${JSON.stringify(lc)}`);
    assert.match(lc.text, /cloakpipe refused transfer: policy_denied: /);
  }
});

// ── random streams ──────────────────────────────────────────────────────────────────────────

/** One random Responses stream: text or not, one or two calls cut anywhere, and now and then a change meant to mislead. */
function randomResponses(seed: number): string {
  const r = rng(seed);
  const events: Record<string, unknown>[] = [created];
  const output: Record<string, unknown>[] = [];
  const other = (c: (typeof CALLS)[number]) => argsText(r.pick(CALLS.filter((x) => argsText(x) !== argsText(c))));
  const hostile = r.next() < 0.35 ? r.int(6) : -1;
  if (r.next() < 0.3) {
    events.push(...text(0, 'Let me check.'));
    output.push(message('Let me check.'));
  }
  for (let i = 0, n = 1 + r.int(2); i < n; i++) {
    const c = r.pick(CALLS);
    const index = output.length;
    const item = { id: `fc_r${i}`, type: 'function_call', status: 'completed', arguments: argsText(c), call_id: `call_r${i}`, name: c.name };
    const deltas = cuts(r, item.arguments, 1 + r.int(6));
    if (r.next() < 0.2) deltas.splice(r.int(deltas.length + 1), 0, '');
    events.push({ type: 'response.output_item.added', output_index: index, item: { ...item, status: 'in_progress', arguments: '' } });
    if (hostile === 0 && i === 0) events.push({ type: 'response.output_item.added', output_index: index, item: { ...item, status: 'in_progress', arguments: '' } });
    for (const delta of deltas) events.push({ type: 'response.function_call_arguments.delta', item_id: item.id, output_index: index, delta });
    events.push({ type: 'response.function_call_arguments.done', item_id: item.id, output_index: index, arguments: hostile === 1 && i === 0 ? other(c) : item.arguments });
    const done = hostile === 2 && i === 0 ? { ...item, ...(r.next() < 0.5 ? { arguments: other(c) } : { name: 'delete_branch' }) } : item;
    events.push({ type: 'response.output_item.done', output_index: index, item: done });
    output.push(hostile === 3 && i === 0 ? { ...item, arguments: other(c) } : done);
  }
  if (hostile === 4) events.splice(1, 0, { type: 'response.in_progress', response: { ...RESPONSE, output: [output.at(-1)] } });
  if (hostile === 5) output.push({ id: 'mcp_r', type: 'mcp_call', status: 'completed', server_label: 'bank', name: 'transfer', arguments: LARGE, output: 'ok' });
  // Most streams end with their final event; some just stop, after a call's last event or inside one.
  const end = r.next();
  if (end < 0.8) events.push(completed(output));
  else if (end < 0.9) events.splice(events.length - 1 - r.int(3));
  return sse(events);
}

type Reading = { calls: { type: string; name: unknown; args: unknown }[]; error?: string };

const parsed = (text: string): unknown => {
  try {
    return JSON.parse(text);
  } catch {
    return text; // what the agent would be handed: never an allowed call's arguments
  }
};

/** The three agents, each reading one stream through the gate: the calls it runs. */
const READERS: [string, (events: string) => Promise<Reading>][] = [
  [
    'the official SDK',
    async (events) => {
      const { stream: _s, ...params } = responsesParams({ rawBody: events }, true);
      try {
        const res = await openaiAgent(gate.url).responses.stream(params).finalResponse();
        const items = res.output.filter((i) => i.type !== 'message' && i.type !== 'reasoning') as { type: string; name?: string; arguments?: string }[];
        return { calls: items.map((i) => ({ type: i.type, name: i.name, args: parsed(i.arguments ?? '') })) };
      } catch (e) {
        return { calls: [], error: (e as Error).message };
      }
    },
  ],
  ['the AI SDK', async (events) => {
    const t = await aiSdkTurn(gate.url, 'responses', { rawBody: events }, true);
    return { calls: t.ran.map((c) => ({ type: 'function_call', ...c })), ...(t.error !== undefined ? { error: t.error } : {}) };
  }],
  ['LangChain', async (events) => {
    const t = await langchainTurn(gate.url, 'responses', { rawBody: events }, true);
    return { calls: t.calls.map((c) => ({ type: 'function_call', ...c })), ...(t.error !== undefined ? { error: t.error } : {}) };
  }],
];

test('random streams, three agents: every call an agent runs through the gate is one the gate allowed, name and arguments', async () => {
  let released = 0;
  let refused = 0;
  for (let seed = 1; seed <= 80; seed++) {
    const events = randomResponses(seed);
    for (const [who, read] of READERS) {
      const from = nextSeq(s.home);
      const r = await read(events);
      try {
        if (r.error !== undefined) assert.match(r.error, /fail_closed/, 'an SDK error through the gate is the gate refusing the stream');
        assertAllowed(s.home, from, r.calls, 'function_call');
      } catch (e) {
        throw new Error(`seed ${seed}, ${who}: ${(e as Error).message}\n${events}`);
      }
      if (r.calls.length > 0) released++;
      else refused++;
    }
  }
  // Both kinds happened: the property was checked on calls that went through, not only on refusals.
  assert.ok(released > 60 && refused > 40, `released ${released}, refused ${refused}`);
});
