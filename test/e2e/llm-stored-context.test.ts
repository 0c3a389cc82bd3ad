// The Responses API can make the model read context it stores instead of what the request
// holds: an earlier response (`previous_response_id`), a conversation (`conversation`, whose
// items anyone with the key adds straight to the API), an item by its id (`item_reference`), a
// compacted context (`compaction`, encrypted). Tool output in there never passed the gate, so
// the label could not follow it: such a request is refused fail_closed before the model, named
// and recorded (ADR 096). Straight to the fake model API each request gets its call.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startFakeModel, type FakeModel } from '../helpers/fake-model.js';
import { llmSetup, openaiAgent, startLlmGate, type LlmGate, type LlmSetup } from '../helpers/llm-gate.js';
import { responsesParams } from '../helpers/llm-agent.js';
import { decisions, ledgerOf } from '../helpers/support-desk.js';

const POST = { calls: [{ name: 'post_public', arguments: { text: 'status: green' } }] };
const CANARY = 'canary-5d1c0a77';

/** Each way to name stored context: what it adds to the request, the member the refusal names. */
const STORED: { name: string; extra: (p: ReturnType<typeof responsesParams>) => object; names: RegExp }[] = [
  { name: 'previous_response_id', extra: () => ({ previous_response_id: `resp_${CANARY}` }), names: /previous_response_id: / },
  { name: 'conversation (id)', extra: () => ({ conversation: `conv_${CANARY}` }), names: /conversation: / },
  { name: 'conversation (object)', extra: () => ({ conversation: { id: `conv_${CANARY}` } }), names: /conversation: / },
  { name: 'an item_reference input item', extra: (p) => ({ input: [{ type: 'item_reference', id: `fc_out_${CANARY}` }, ...p.input] }), names: /input\[0\]: item_reference: / },
  { name: 'a compaction input item', extra: (p) => ({ input: [...p.input.slice(0, -1), { type: 'compaction', id: 'cmp_1', encrypted_content: `gAAA${CANARY}` }, ...p.input.slice(-1)] }), names: /input\[0\]: compaction: / },
];

let fake: FakeModel;
let s: LlmSetup;
let gate: LlmGate;
before(async () => {
  fake = await startFakeModel();
  s = llmSetup();
  gate = await startLlmGate(s, fake.url);
});
after(async () => {
  await gate?.stop();
  await fake?.close();
});

/** The call names of one Responses turn with `extra` in its request, streamed or not. */
async function calls(base: string, stream: boolean, extra: (p: ReturnType<typeof responsesParams>) => object): Promise<string[]> {
  const params = responsesParams(POST, stream);
  const body = { ...params, ...extra(params) } as typeof params;
  const client = openaiAgent(base);
  const { stream: _s, ...rest } = body;
  const r = stream ? await client.responses.stream(rest).finalResponse() : await client.responses.create(rest);
  return r.output.flatMap((i) => (i.type === 'function_call' ? [i.name] : []));
}

for (const c of STORED) {
  for (const stream of [false, true]) {
    test(`responses${stream ? ', streamed' : ''}: a request naming ${c.name} is refused fail_closed before the model`, async () => {
      assert.deepEqual(await calls(fake.url, stream, c.extra), ['post_public'], 'positive control');
      const seen = fake.seen.length;
      const made = decisions(s.home).length;
      await assert.rejects(calls(gate.url, stream, c.extra), (e: { status?: number; message?: string }) => {
        assert.equal(e.status, 400);
        assert.match(e.message ?? '', /cloakpipe refused the request: fail_closed: request: /);
        assert.match(e.message ?? '', c.names);
        assert.ok(!(e.message ?? '').includes(CANARY), 'the refusal names the member, not its value');
        return true;
      });
      assert.equal(fake.seen.length, seen, 'not forwarded');
      assert.deepEqual(decisions(s.home).slice(made).map((d) => [d.outcome, d.reason]), [['refuse', 'fail_closed']]);
    });
  }
}

test('responses: the whole input, the model\'s own items and a result sent back, passes as before', async () => {
  const first = await calls(gate.url, false, () => ({}));
  assert.deepEqual(first, ['post_public']);
  const input = [
    { type: 'reasoning', id: 'rs_1', summary: [], encrypted_content: 'gAAAA-opaque' },
    { type: 'function_call', call_id: 'call_x', name: 'get_weather', arguments: '{"city":"Oslo"}' },
    { type: 'function_call_output', call_id: 'call_x', output: 'sunny' },
  ];
  assert.deepEqual(await calls(gate.url, true, (p) => ({ input: [...input, ...p.input] })), ['post_public']);
  assert.ok(!JSON.stringify(ledgerOf(s.home)).includes(CANARY));
  assert.ok(!gate.stderr().includes(CANARY));
});
