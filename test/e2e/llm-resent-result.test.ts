// A tool result the gate settled comes back with every later request, as the agent keeps its
// history; the agent may send it again with other content (a framework that edits or truncates
// its history, a result filled in later, or a host that swaps it on purpose). The label must
// follow what reaches the model: content changed under a settled id is classified again, so a
// confidential text slipped in under a weather result still closes the public sink.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startFakeModel, type FakeModel } from '../helpers/fake-model.js';
import { fixtureFiles } from '../helpers/cli.js';
import { anthropicAgent, LLM_CONTEXT, LLM_MANIFEST, LLM_POLICY, openaiAgent, startLlmGate, type LlmSetup } from '../helpers/llm-gate.js';
import { anthropicTurn, openaiTurn, type Turn } from '../helpers/llm-agent.js';
import { decisions, ledgerOf } from '../helpers/support-desk.js';

const CANARY = 'canary-7f3e9b21';
const MANIFEST = `${LLM_MANIFEST}classify:\n  - { label: confidential, pattern: "canary-[0-9a-f]{8}" }\n`;
const WEATHER = { calls: [{ name: 'get_weather', arguments: { city: 'Oslo' }, id: 'call_weather_1' }] };
const POST = { calls: [{ name: 'post_public', arguments: { text: 'status: green' } }] };

let fake: FakeModel;
before(async () => void (fake = await startFakeModel()));
after(() => fake?.close());

/** One format's agent: a turn with the weather call's result (`content`) in its history. */
interface Agent {
  turn(base: string, script: object, content?: string): Promise<Turn>;
}

const openai: Agent = {
  turn: (base, script, content) => {
    const messages =
      content === undefined
        ? []
        : [
            { role: 'user', content: 'weather?' },
            { role: 'assistant', content: null, tool_calls: [{ id: 'call_weather_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } }] },
            { role: 'tool', tool_call_id: 'call_weather_1', content },
          ];
    return openaiTurn(openaiAgent(base), script, false, { messages });
  },
};

const anthropic: Agent = {
  turn: (base, script, content) => {
    const messages =
      content === undefined
        ? []
        : [
            { role: 'user', content: 'weather?' },
            { role: 'assistant', content: [{ type: 'tool_use', id: 'call_weather_1', name: 'get_weather', input: { city: 'Oslo' } }] },
            { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_weather_1', content }] },
          ];
    return anthropicTurn(anthropicAgent(base), script, true, { messages });
  },
};

for (const [name, agent] of [['chat completions', openai], ['anthropic messages, streamed', anthropic]] as const) {
  test(`${name}: a settled result sent again with other content is classified again`, async () => {
    const f = fixtureFiles('cloakpipe-llm-resent-', { manifest: MANIFEST, policy: LLM_POLICY, context: LLM_CONTEXT });
    const s: LlmSetup = { ...f, spans: '' };
    const g = await startLlmGate(s, fake.url);
    try {
      assert.deepEqual((await agent.turn(g.url, WEATHER)).calls.map((c) => c.name), ['get_weather']);
      // Its result settles the call; the label stays public, the public post goes out.
      assert.deepEqual((await agent.turn(g.url, POST, 'sunny, 12 C')).calls.map((c) => c.name), ['post_public']);
      // The same id again, its content now confidential: the model reads it, so the label rises.
      const made = decisions(s.home).length;
      const turn = await agent.turn(g.url, POST, `sunny, 12 C ${CANARY}`);
      assert.deepEqual(turn.calls, []);
      assert.match(turn.text, /^cloakpipe refused post_public: sink_ceiling_exceeded: /);
      assert.deepEqual(decisions(s.home).slice(made).map((d) => [d.tool, d.outcome, d.reason]), [['post_public', 'refuse', 'sink_ceiling_exceeded']]);
      // The same content once more is not read again: one label rise in all.
      await agent.turn(g.url, { text: 'ok' }, `sunny, 12 C ${CANARY}`);
    } finally {
      await g.stop();
    }
    const entries = ledgerOf(s.home);
    assert.deepEqual(entries.filter((e) => e.kind === 'label').map((e) => [e.from, e.to]), [['public', 'confidential']]);
    const weather = entries.find((e) => e.kind === 'decision' && e.tool === 'get_weather');
    assert.deepEqual(entries.filter((e) => e.kind === 'result' && e.decision === weather?.seq).map((e) => e.outcome), ['ok'], 'the call settled once');
    assert.ok(!JSON.stringify(entries).includes(CANARY), 'no result text in the ledger');
    assert.ok(!g.stderr().includes(CANARY), 'no result text in the log');
  });
}
