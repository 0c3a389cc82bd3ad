// An agent sends its whole history with every request, so the model reads a tool result again
// each turn. A classify rule added by a manifest reload applies to that history too: the result
// read before the reload, resent after it, raises the label by the new rule, and the public post
// the model proposes next is refused. Before, a result was read once for good: the rule held only
// for results the gate had not seen, and the post went out while the model read the marker.
// Real binary (llm-proxy), official OpenAI and Anthropic SDKs, the fake model API.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startFakeModel, type FakeModel } from '../helpers/fake-model.js';
import { anthropicAgent, LLM_MANIFEST, llmSetup, openaiAgent, startLlmGate } from '../helpers/llm-gate.js';
import { anthropicTurn, openaiTurn, type Format, type History, type Turn } from '../helpers/llm-agent.js';
import { replaceFile } from '../helpers/gate.js';
import { ledgerOf } from '../helpers/support-desk.js';

const FORECAST = 'sunny; billed to ACCT-12345678';
const POST = { calls: [{ name: 'post_public', arguments: { text: 'status: green' }, id: 'call_post_status' }] };
const RULE = 'classify:\n  - { label: internal, pattern: "ACCT-[0-9]{8}" }\n';

let fake: FakeModel;
before(async () => void (fake = await startFakeModel()));
after(() => fake?.close());

const HISTORY: Partial<Record<Format, unknown[]>> = {
  openai: [
    { role: 'user', content: 'weather?' },
    { role: 'assistant', content: null, tool_calls: [{ id: 'call_weather_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } }] },
    { role: 'tool', tool_call_id: 'call_weather_1', content: FORECAST },
  ],
  anthropic: [
    { role: 'user', content: 'weather?' },
    { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_weather_1', name: 'get_weather', input: { city: 'Oslo' } }] },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_weather_1', content: FORECAST }] },
  ],
};

const TURN: Partial<Record<Format, (base: string, script: object, h?: History) => Promise<Turn>>> = {
  openai: (base, script, h) => openaiTurn(openaiAgent(base), script, false, h),
  anthropic: (base, script, h) => anthropicTurn(anthropicAgent(base), script, false, h),
};

for (const format of ['openai', 'anthropic'] as const) {
  test(`${format}: a classify rule added by a reload applies to a result resent in the history`, { timeout: 120_000 }, async () => {
    const s = llmSetup();
    const g = await startLlmGate(s, fake.url);
    const turn = TURN[format]!;
    const messages = HISTORY[format]!;
    try {
      assert.deepEqual((await turn(g.url, POST, { messages })).calls.map((c) => c.name), ['post_public'], 'no rule yet: served');
      replaceFile(s.manifest, LLM_MANIFEST + RULE);
      const after = await turn(g.url, POST, { messages });
      assert.deepEqual(after.calls, []);
      assert.match(after.text, /cloakpipe refused post_public: sink_ceiling_exceeded: /);
    } finally {
      await g.stop();
    }
    const entries = ledgerOf(s.home);
    assert.deepEqual(entries.filter((e) => e.kind === 'reload').map((e) => e.outcome), ['loaded']);
    assert.deepEqual(entries.filter((e) => e.kind === 'label').map((e) => [e.from, e.to, e.cause, e.tool]), [['public', 'internal', 'classify', 'get_weather']]);
    assert.ok(!JSON.stringify(entries).includes('ACCT-'), 'no result text in the ledger');
  });
}
