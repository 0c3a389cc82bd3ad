// The LLM door against a model API that streams on purpose what the real APIs never send: a
// call's name in two fragments, a fragment that turns a function call into another kind, argument
// fragments that are not text, a tool_use block whose start carries an input its deltas then
// replace, a tool_use block naming a toolset. The gate decides what it reads; the agent runs what
// its SDK reads. Three agents read each stream: the official SDKs; the Vercel AI SDK, whose
// providers parse the wire themselves; LangChain, which joins the chunks its own way. The
// property: every call an agent runs through the gate is one the gate allowed, with the same name and the same arguments (digest for digest), and no
// call of a kind the gate does not gate reaches it. Straight from the fake API, the same streams
// make an agent run something else than a naive reading (the positive controls), so each case
// would let a call through unseen.
// Then the same property over random streams (fragments cut anywhere, empty and null members,
// repeated ids, and now and then one of the hostile members above) and random whole bodies.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import type { FakeModel } from '../helpers/fake-model.js';
import { closeLlmWorld, openLlmWorld, openaiAgent, anthropicAgent, type LlmGate, type LlmSetup } from '../helpers/llm-gate.js';
import { anthropicParams, openaiParams, type Format as AnyFormat } from '../helpers/llm-agent.js';
import { aiSdkTurn } from '../helpers/ai-sdk-agent.js';
import { langchainTurn } from '../helpers/langchain-agent.js';
import { argsText, assertAllowed, CALLS, cuts, nextSeq, rng } from '../helpers/llm-random.js';

/** The formats read here; the Responses format's hostile streams are in llm-responses.test.ts. */
type Format = Exclude<AnyFormat, 'responses'>;

let fake: FakeModel;
let s: LlmSetup;
let gate: LlmGate;

before(async () => void ({ fake, s, gate } = await openLlmWorld()));
after(() => closeLlmWorld(fake, gate));

/** A call as the agent's SDK hands it over. */
interface Read {
  type: string;
  name: unknown;
  args: unknown;
}

/** What an agent runs from a response, and the error it met (after which it may still have run calls released before). */
type Reading = { calls: Read[]; error?: string };
type Reader = (base: string, events: string) => Promise<Reading>;

async function openaiReads(base: string, events: string): Promise<Reading> {
  const { stream: _s, ...params } = openaiParams({ rawBody: events }, true);
  try {
    const c = await openaiAgent(base).chat.completions.stream(params).finalChatCompletion();
    return {
      calls: (c.choices[0]?.message.tool_calls ?? []).map((t) => {
        const any = t as unknown as { type: string; function?: { name: unknown; arguments: string }; custom?: { name: unknown; input: unknown } };
        return any.type === 'function' ? { type: 'function', name: any.function!.name, args: JSON.parse(any.function!.arguments) } : { type: any.type, name: any.custom?.name, args: any.custom?.input };
      }),
    };
  } catch (e) {
    return { calls: [], error: (e as Error).message };
  }
}

async function anthropicReads(base: string, events: string): Promise<Reading> {
  const { stream: _s, ...params } = anthropicParams({ rawBody: events }, true);
  try {
    const m = await anthropicAgent(base).messages.stream(params).finalMessage();
    return { calls: m.content.flatMap((b) => (b.type === 'tool_use' ? [{ type: 'tool_use', name: b.name, args: b.input }] : [])) };
  } catch (e) {
    return { calls: [], error: (e as Error).message };
  }
}

/** A framework's calls as a reading: of the format's one kind (these agents run no other). */
function reading(format: Format, calls: { name: string; args: unknown }[], error: string | undefined): Reading {
  const read = calls.map((c) => ({ type: format === 'openai' ? 'function' : 'tool_use', name: c.name, args: c.args }));
  return error === undefined ? { calls: read } : { calls: read, error };
}

/** The Vercel AI SDK as the agent: the tools it ran (a tool of the manifest runs whatever it is given). */
function aiSdkReads(format: Format, stream = true): Reader {
  return async (base, events) => {
    const t = await aiSdkTurn(base, format, { rawBody: events }, stream);
    return reading(format, t.ran, t.error);
  };
}

/** LangChain as the agent: the tool calls of the message it joined, which its agents run. */
function langchainReads(format: Format, stream = true): Reader {
  return async (base, events) => {
    const t = await langchainTurn(base, format, { rawBody: events }, stream);
    return reading(format, t.calls, t.error);
  };
}

const OFFICIAL: Record<Format, Reader> = { openai: openaiReads, anthropic: anthropicReads };
const READERS = (format: Format): [string, Reader][] => [
  ['the official SDK', OFFICIAL[format]],
  ['the AI SDK', aiSdkReads(format)],
  ['LangChain', langchainReads(format)],
];

/** The official SDK reading a whole body (not streamed): the first choice's calls, the message's tool_use blocks. */
async function officialBodyReads(format: Format, base: string, body: string): Promise<Reading> {
  try {
    if (format === 'anthropic') {
      const { stream: _s, ...params } = anthropicParams({ rawBody: body }, false);
      const m = await anthropicAgent(base).messages.create(params);
      return { calls: m.content.flatMap((b) => (b.type === 'tool_use' ? [{ type: 'tool_use', name: b.name, args: b.input }] : [])) };
    }
    const { stream: _s, ...params } = openaiParams({ rawBody: body }, false);
    const c = await openaiAgent(base).chat.completions.create(params);
    return { calls: (c.choices[0]?.message.tool_calls ?? []).map((t) => (t.type === 'function' ? { type: 'function', name: t.function.name, args: JSON.parse(t.function.arguments) } : { type: t.type, name: t.custom.name, args: t.custom.input })) };
  } catch (e) {
    return { calls: [], error: (e as Error).message };
  }
}

/** The three agents reading whole bodies. */
const BODY_READERS = (format: Format): [string, Reader][] => [
  ['the official SDK', (base, body) => officialBodyReads(format, base, body)],
  ['the AI SDK', aiSdkReads(format, false)],
  ['LangChain', langchainReads(format, false)],
];

/**
 * Through the gate: the agent runs calls the gate allowed, each as the gate decided it, and any
 * error it meets is the gate's fail_closed refusal. Returns the reading.
 */
async function gated(format: Format, events: string, reader: Reader = OFFICIAL[format]): Promise<Reading> {
  const from = nextSeq(s.home);
  const r = await reader(gate.url, events);
  if (r.error !== undefined) assert.match(r.error, /fail_closed/, 'an SDK error through the gate is the gate refusing the stream');
  assertAllowed(s.home, from, r.calls, format === 'openai' ? 'function' : 'tool_use');
  return r;
}

/** Nothing ran: the stream was refused, or every call in it. */
const noneRan = (r: Reading) => r.calls.length === 0;

// ── OpenAI Chat Completions streams ─────────────────────────────────────────────────────────

const HEAD = { id: 'chatcmpl-readings', object: 'chat.completion.chunk', created: 1764547200, model: 'gpt-4o-2024-08-06' };
const chunk = (delta: object, finish: string | null = null) => `data: ${JSON.stringify({ ...HEAD, choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] })}\n\n`;
const frag = (f: object) => chunk({ tool_calls: [{ index: 0, ...f }] });
const openaiStream = (...frags: object[]) => [chunk({ role: 'assistant', content: null }), ...frags.map(frag), chunk({}, 'tool_calls'), 'data: [DONE]\n\n'].join('');
const FIRST = { id: 'call_readings_1', type: 'function', function: { name: 'get_weather', arguments: '' } };

/** The tool call fragments an agent iterating the SDK's chunks sees (many frameworks join them themselves). */
async function openaiFragments(base: string, events: string): Promise<Record<string, unknown>[] | { error: string }> {
  const params = { ...openaiParams({ rawBody: events }, false), stream: true as const };
  const out: Record<string, unknown>[] = [];
  try {
    for await (const c of await openaiAgent(base).chat.completions.create(params)) for (const ch of c.choices) out.push(...((ch.delta.tool_calls ?? []) as unknown as Record<string, unknown>[]));
  } catch (e) {
    return { error: (e as Error).message };
  }
  return out;
}

test('openai stream: a later fragment turns the function call into a custom tool call: no agent sees it through the gate', async () => {
  const events = openaiStream(FIRST, { function: { arguments: '{"city":"Paris"}' } }, { type: 'custom', custom: { name: 'shell_exec', input: 'cat /etc/shadow' } });
  // An agent joining the chunks itself gets a custom call to shell_exec; the SDK's own stream helper refuses custom calls.
  const direct = await openaiFragments(fake.url, events);
  assert.ok(Array.isArray(direct) && direct.some((f) => f.type === 'custom'), `positive control: ${JSON.stringify(direct)}`);
  const through = await openaiFragments(gate.url, events);
  assert.ok(!Array.isArray(through) || !through.some((f) => f.type === 'custom' || 'custom' in f), JSON.stringify(through));
  for (const [who, read] of READERS('openai')) assert.ok(noneRan(await gated('openai', events, read)), who);
});

/** Each with its positive control: what the agent named in `by` (the official SDK unless named) runs straight from the API. */
const OPENAI_HOSTILE: { name: string; events: string; direct: (c: Read[]) => boolean; by?: 'the AI SDK' }[] = [
  {
    name: 'the name comes in two fragments (the SDK keeps the last, other readers join them)',
    events: openaiStream({ ...FIRST, function: { name: 'get_', arguments: '' } }, { function: { name: 'weather', arguments: '{"city":"Paris"}' } }),
    direct: (c) => c[0]?.name === 'weather',
  },
  {
    name: 'argument fragments that are numbers, not text',
    events: openaiStream({ ...FIRST, function: { name: 'transfer', arguments: '{"amount":5' } }, { function: { arguments: 9 } }, { function: { arguments: 9 } }, { function: { arguments: 9 } }, { function: { arguments: '}' } }),
    direct: (c) => (c[0]?.args as { amount?: number })?.amount === 5999,
  },
  {
    name: 'a later fragment names the call with a number',
    events: openaiStream(FIRST, { function: { name: 7, arguments: '{"city":"Paris"}' } }),
    direct: (c) => c[0]?.name === 7,
  },
  {
    name: 'a named fragment opens new arguments at the same index (the AI SDK runs it as a second call)',
    events: openaiStream({ ...FIRST, function: { name: 'transfer', arguments: '{"amount":5}' } }, { function: { name: 'transfer', arguments: '{"amount":5000}' } }),
    direct: (c) => c.some((x) => (x.args as { amount?: number })?.amount === 5000),
    by: 'the AI SDK',
  },
];

for (const h of OPENAI_HOSTILE) {
  test(`openai stream: ${h.name}: the agent never gets a call the gate did not allow`, async () => {
    const direct = await (h.by ? aiSdkReads('openai') : openaiReads)(fake.url, h.events);
    assert.ok(h.direct(direct.calls), `positive control: straight from the API the SDK reads ${JSON.stringify(direct)}`);
    for (const [who, read] of READERS('openai')) assert.ok(noneRan(await gated('openai', h.events, read)), who);
  });
}

test('openai stream: a chunk whose choice carries a whole message with calls: the SDK takes that message, so the gate refuses the stream', async () => {
  const smuggled = { role: 'assistant', content: null, tool_calls: [{ id: 'call_smuggled', type: 'function', function: { name: 'transfer', arguments: '{"amount":99999}' } }] };
  const events = [`data: ${JSON.stringify({ ...HEAD, choices: [{ index: 0, delta: { role: 'assistant', content: 'On it.' }, message: smuggled, logprobs: null, finish_reason: null }] })}\n\n`, chunk({}, 'tool_calls'), 'data: [DONE]\n\n'].join('');
  const direct = await openaiReads(fake.url, events);
  assert.ok(direct.calls.some((c) => c.name === 'transfer'), `positive control: ${JSON.stringify(direct)}`);
  for (const [who, read] of READERS('openai')) assert.ok(noneRan(await gated('openai', events, read)), who);
});

test('openai stream: a second choice\'s calls: the AI SDK reads choices[0] of every chunk and runs them too, so the gate decides every choice', async () => {
  const call = (i: number, id: string, name: string, args: string) => `data: ${JSON.stringify({ ...HEAD, choices: [{ index: i, delta: { tool_calls: [{ index: 0, id, type: 'function', function: { name, arguments: args } }] }, logprobs: null, finish_reason: null }] })}\n\n`;
  const events = [
    `data: ${JSON.stringify({ ...HEAD, choices: [0, 1].map((index) => ({ index, delta: { role: 'assistant', content: null }, logprobs: null, finish_reason: null })) })}\n\n`,
    call(0, 'call_choice_0', 'get_weather', '{"city":"Paris"}'),
    call(1, 'call_choice_1', 'transfer', '{"amount":5000}'),
    `data: ${JSON.stringify({ ...HEAD, choices: [0, 1].map((index) => ({ index, delta: {}, logprobs: null, finish_reason: 'tool_calls' })) })}\n\n`,
    'data: [DONE]\n\n',
  ].join('');
  const direct = await aiSdkReads('openai')(fake.url, events);
  assert.deepEqual(direct.calls.map((c) => c.name).sort(), ['get_weather', 'transfer'], `positive control: ${JSON.stringify(direct)}`);
  // The transfer is over the policy's limit: refused in its own choice; the weather call runs.
  const r = await gated('openai', events, aiSdkReads('openai'));
  assert.deepEqual(r.calls.map((c) => c.name), ['get_weather'], JSON.stringify(r));
});

// ── Anthropic Messages streams ──────────────────────────────────────────────────────────────

const ev = (type: string, data: object) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
const MESSAGE_START = ev('message_start', { message: { id: 'msg_readings', type: 'message', role: 'assistant', model: 'claude-sonnet-5-5', content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 10, output_tokens: 1 } } });
const MESSAGE_END = ev('message_delta', { delta: { stop_reason: 'tool_use', stop_sequence: null }, usage: { output_tokens: 9 } }) + ev('message_stop', {});
function anthropicStream(input: object, pieces: string[] | null, name = 'get_weather', more: object = {}): string {
  const deltas = (pieces ?? []).map((p) => ev('content_block_delta', { index: 0, delta: { type: 'input_json_delta', partial_json: p } }));
  return [MESSAGE_START, ev('content_block_start', { index: 0, content_block: { type: 'tool_use', id: 'toolu_readings_1', name, input, ...more } }), ...deltas, ev('content_block_stop', { index: 0 }), MESSAGE_END].join('');
}

test('anthropic stream: a block whose start holds an input: each agent reads another call (the official SDK the deltas, the AI SDK both joined, LangChain the deltas alone), so the gate refuses it', async () => {
  // Straight from the API, the same three streams read three ways; one is a transfer the policy forbids.
  const cases: [string, string, [string, unknown][]][] = [
    ['one empty delta', anthropicStream({ amount: 5000 }, [''], 'transfer'), [['the official SDK', {}], ['the AI SDK', { amount: 5000 }], ['LangChain', {}]]],
    ['no delta', anthropicStream({ amount: 5 }, null, 'transfer'), [['the official SDK', { amount: 5 }], ['the AI SDK', { amount: 5 }], ['LangChain', {}]]],
    // (the AI SDK's join of start and deltas is not JSON: it runs nothing)
    ['deltas', anthropicStream({ amount: 5 }, ['{"amount":', '7}'], 'transfer'), [['the official SDK', { amount: 7 }], ['LangChain', { amount: 7 }]]],
  ];
  for (const [what, events, expected] of cases) {
    const readers = new Map(READERS('anthropic'));
    for (const [who, args] of expected) {
      const direct = await readers.get(who)!(fake.url, events);
      assert.deepEqual(direct.calls.map((c) => c.args), [args], `positive control (${what}): ${who} reads ${JSON.stringify(direct)}`);
    }
    for (const [who, read] of readers) assert.ok(noneRan(await gated('anthropic', events, read)), `${what}: ${who}`);
  }
  // An empty start, with deltas or without, reads the same to all three; the gate allows it.
  for (const [who, read] of READERS('anthropic')) {
    const deltas = await gated('anthropic', anthropicStream({}, ['{"city":', '"Paris"}']), read);
    assert.deepEqual(deltas.calls.map((c) => c.args), [{ city: 'Paris' }], who);
    const none = await gated('anthropic', anthropicStream({}, null, 'transfer'), read);
    assert.deepEqual(none.calls.map((c) => c.args), [{}], who);
  }
});

/** A message body holding one tool_use block. */
const anthropicBody = (block: object) => JSON.stringify({ id: 'msg_readings', type: 'message', role: 'assistant', model: 'claude-sonnet-5-5', content: [{ type: 'tool_use', id: 'toolu_readings_1', ...block }], stop_reason: 'tool_use', stop_sequence: null, usage: { input_tokens: 10, output_tokens: 9 } });

test('anthropic: a tool_use block naming a toolset: the AI SDK runs the toolset\'s tool, not the block\'s, so the gate refuses it, streamed or not', async () => {
  const toolset = { toolset_name: 'delete_branch' };
  const events = anthropicStream({}, ['{"city":"Paris"}'], 'get_weather', toolset);
  const body = anthropicBody({ name: 'get_weather', input: { city: 'Paris' }, ...toolset });
  // get_weather is allowed; straight from the API the AI SDK runs delete_branch, which needs an approval.
  for (const [what, read, text] of [['stream', aiSdkReads('anthropic'), events], ['body', aiSdkReads('anthropic', false), body]] as const) {
    const direct = await read(fake.url, text);
    assert.deepEqual(direct.calls.map((c) => c.name), ['delete_branch'], `positive control (${what}): ${JSON.stringify(direct)}`);
    assert.ok(noneRan(await gated('anthropic', text, read)), what);
  }
  assert.ok(noneRan(await gated('anthropic', events)), 'the official SDK, streamed');
  // A null toolset_name is no toolset: the call is the block's, and the gate allows it.
  for (const [who, read] of READERS('anthropic')) {
    const plain = await gated('anthropic', anthropicStream({}, ['{"city":"Paris"}'], 'get_weather', { toolset_name: null }), read);
    assert.deepEqual(plain.calls.map((c) => c.name), ['get_weather'], who);
  }
});

test('anthropic stream: a message_start whose message already holds a tool_use block: the SDK starts from it, so the gate refuses the stream', async () => {
  const start = ev('message_start', { message: { id: 'msg_smuggled', type: 'message', role: 'assistant', model: 'claude-sonnet-5-5', content: [{ type: 'tool_use', id: 'toolu_smuggled', name: 'transfer', input: { amount: 99999 } }], stop_reason: null, stop_sequence: null, usage: { input_tokens: 10, output_tokens: 1 } } });
  const events = start + MESSAGE_END;
  const direct = await anthropicReads(fake.url, events);
  assert.ok(direct.calls.some((c) => c.name === 'transfer'), `positive control: ${JSON.stringify(direct)}`);
  for (const [who, read] of READERS('anthropic')) assert.ok(noneRan(await gated('anthropic', events, read)), who);
});

// ── Rewritten responses ─────────────────────────────────────────────────────────────────────

const WEATHER = { name: 'get_weather', arguments: { city: 'Paris' } };
const LARGE_TRANSFER = { name: 'transfer', arguments: { amount: 5000 } };

for (const format of ['openai', 'anthropic'] as const) {
  for (const stream of [false, true]) {
    test(`${format} ${stream ? 'streamed' : 'body'}: a refused call reaches the AI SDK and LangChain agents as the refusal's text; they run the allowed call only, and with none left the turn ends`, async () => {
      const both = { text: 'Working on it.', calls: [WEATHER, LARGE_TRANSFER] };
      const ai = await aiSdkTurn(gate.url, format, both, stream);
      assert.equal(ai.error, undefined);
      assert.deepEqual(ai.ran, [{ name: 'get_weather', args: { city: 'Paris' } }]);
      assert.match(ai.text, /cloakpipe refused transfer: policy_denied: /);
      assert.equal(ai.finish, 'tool-calls');
      const lc = await langchainTurn(gate.url, format, both, stream);
      assert.equal(lc.error, undefined);
      assert.deepEqual(lc.calls, [{ name: 'get_weather', args: { city: 'Paris' } }]);
      assert.match(lc.text, /cloakpipe refused transfer: policy_denied: /);
      // Only the refused call: nothing to run, and the AI SDK reads the turn as over.
      const alone = { calls: [LARGE_TRANSFER] };
      const aiAlone = await aiSdkTurn(gate.url, format, alone, stream);
      assert.deepEqual([aiAlone.ran, aiAlone.finish], [[], 'stop']);
      assert.match(aiAlone.text, /^cloakpipe refused transfer: policy_denied: /);
      const lcAlone = await langchainTurn(gate.url, format, alone, stream);
      assert.deepEqual(lcAlone.calls, []);
      assert.match(lcAlone.text, /^cloakpipe refused transfer: policy_denied: /);
    });
  }
}

// ── Random streams ──────────────────────────────────────────────────────────────────────────

/** One random OpenAI stream of one call: the name and arguments cut anywhere, members that mean nothing, sometimes a hostile one. */
function randomOpenai(seed: number): string {
  const r = rng(seed);
  const call = r.pick(CALLS);
  const names = r.next() < 0.2 ? cuts(r, call.name, 3) : [call.name];
  const args = cuts(r, argsText(call), 1 + r.int(6));
  const frags: Record<string, unknown>[] = [];
  const n = Math.max(names.length, args.length);
  for (let i = 0; i < n; i++) {
    const f: Record<string, unknown> = {};
    const fn: Record<string, unknown> = {};
    if (i === 0) Object.assign(f, { id: 'call_random_1', type: 'function' });
    else if (r.next() < 0.15) f.id = r.pick(['call_random_1', '', null]);
    if (i > 0 && r.next() < 0.1) f.type = r.pick(['function', null]);
    if (i < names.length) fn.name = names[i];
    else if (r.next() < 0.15) fn.name = r.pick(['', null]);
    if (i < args.length) fn.arguments = args[i];
    else if (r.next() < 0.15) fn.arguments = r.pick(['', null]);
    f.function = fn;
    frags.push(f);
  }
  if (r.next() < 0.3) {
    const at = 1 + r.int(frags.length);
    const hostile: Record<string, unknown>[] = [
      { type: 'custom', custom: { name: 'shell_exec', input: 'id' } },
      { function: { arguments: r.int(10) } },
      { function: { name: 'shell_exec' } },
      { function: { name: 3 } },
      { id: 42 },
      { custom: { name: 'shell_exec', input: 'id' } },
    ];
    frags.splice(at, 0, r.pick(hostile));
  }
  return openaiStream(...frags);
}

/** One random Anthropic stream of one call: an input at the start or none, the deltas cut anywhere, empty ones, now and then a toolset or a caller. */
function randomAnthropic(seed: number): string {
  const r = rng(seed);
  const call = r.pick(CALLS);
  const start = r.next() < 0.5 ? {} : r.next() < 0.5 ? call.args : r.pick(CALLS).args;
  const mode = r.int(3);
  const pieces = mode === 0 ? null : mode === 1 ? cuts(r, argsText(call), 1 + r.int(6)) : r.next() < 0.5 ? [''] : ['', ''];
  if (pieces && r.next() < 0.3) pieces.splice(r.int(pieces.length + 1), 0, '');
  const more = r.next() < 0.15 ? r.pick([{ toolset_name: 'delete_branch' }, { toolset_name: null }, { caller: { type: 'direct' } }]) : {};
  return anthropicStream(start, pieces, call.name, more);
}

/**
 * Each seed's response in both formats, read by each agent through the gate (the property of
 * `gated`); how many readings ran a call and how many ran none. A failure names the seed.
 */
async function randomRounds(seeds: number, make: Record<Format, (seed: number) => string>, readers: (f: Format) => [string, Reader][]): Promise<{ released: number; refused: number }> {
  let released = 0;
  let refused = 0;
  for (let seed = 1; seed <= seeds; seed++) {
    for (const format of ['openai', 'anthropic'] as const) {
      const response = make[format](seed);
      for (const [who, read] of readers(format)) {
        const r = await gated(format, response, read).catch((e: Error) => {
          throw new Error(`${format} seed ${seed}, ${who}: ${e.message}\n${response}`);
        });
        if (r.calls.length > 0) released++;
        else refused++;
      }
    }
  }
  return { released, refused };
}

test('random streams, both formats, three agents: every call an agent runs through the gate is one the gate allowed, name and arguments', async () => {
  const { released, refused } = await randomRounds(150, { openai: randomOpenai, anthropic: randomAnthropic }, READERS);
  // Both kinds happened: the property was checked on calls that went through, not only on refusals.
  assert.ok(released > 100 && refused > 40, `released ${released}, refused ${refused}`);
});

/** One random OpenAI body: one or two calls in the first choice, now and then a second choice, a member no reader should follow, a legacy call. */
function randomOpenaiBody(seed: number): string {
  const r = rng(seed);
  const toolCall = (i: number) => {
    const c = r.pick(CALLS);
    const t: Record<string, unknown> = { id: `call_body_${i}`, type: 'function', function: { name: c.name, arguments: argsText(c) } };
    if (r.next() < 0.15) Object.assign(t, r.pick([{ type: 'custom', custom: { name: 'delete_branch', input: 'main' } }, { custom: { name: 'delete_branch', input: 'main' } }, { extra: true }, { function: { name: c.name, arguments: argsText(c), extra: 'x' } }]));
    return t;
  };
  const message = (n: number): Record<string, unknown> => {
    const m: Record<string, unknown> = { role: 'assistant', content: r.next() < 0.3 ? 'Let me check.' : null, tool_calls: Array.from({ length: n }, (_, i) => toolCall(i)) };
    if (r.next() < 0.1) m.function_call = { name: 'delete_branch', arguments: '{"branch":"main"}' };
    if (r.next() < 0.1) m.refusal = null;
    return m;
  };
  const choices = [{ index: 0, message: message(1 + r.int(2)), logprobs: null, finish_reason: 'tool_calls' }];
  if (r.next() < 0.2) choices.push({ index: 1, message: message(1), logprobs: null, finish_reason: 'tool_calls' });
  if (r.next() < 0.2) choices.reverse();
  return JSON.stringify({ id: 'chatcmpl-body', object: 'chat.completion', created: 1764547200, model: 'gpt-4o-2024-08-06', choices, usage: { prompt_tokens: 10, completion_tokens: 9, total_tokens: 19 } });
}

/** One random Anthropic body: text and tool_use blocks in any order, now and then a toolset, a caller, a block the server ran. */
function randomAnthropicBody(seed: number): string {
  const r = rng(seed);
  const content: Record<string, unknown>[] = [];
  for (let i = 0, n = 1 + r.int(3); i < n; i++) {
    if (r.next() < 0.3) {
      content.push({ type: 'text', text: 'Let me check.' });
      continue;
    }
    const c = r.pick(CALLS);
    const b: Record<string, unknown> = { type: 'tool_use', id: `toolu_body_${i}`, name: c.name, input: c.args };
    if (r.next() < 0.2) Object.assign(b, r.pick([{ toolset_name: 'delete_branch' }, { toolset_name: null }, { caller: { type: 'direct' } }, { type: 'server_tool_use', name: 'web_search', input: { query: 'q' } }]));
    content.push(b);
  }
  return JSON.stringify({ id: 'msg_body', type: 'message', role: 'assistant', model: 'claude-sonnet-5-5', content, stop_reason: 'tool_use', stop_sequence: null, usage: { input_tokens: 10, output_tokens: 9 } });
}

test('random bodies, both formats, three agents: every call an agent runs through the gate is one the gate allowed, name and arguments', async () => {
  const { released, refused } = await randomRounds(100, { openai: randomOpenaiBody, anthropic: randomAnthropicBody }, BODY_READERS);
  assert.ok(released > 100 && refused > 40, `released ${released}, refused ${refused}`);
});
