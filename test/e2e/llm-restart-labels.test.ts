// A gate restarted in the middle of an agent's conversation (an upgrade, a crash) starts its
// session at the task's sensitivity again, while the agent goes on sending its whole history:
// a confidential file it read before the restart is still in what the model reads. A result
// under an id this gate never released is the output of the tool the request's own record of
// the call names: the label rises by that tool's `returns`, as it did when the call settled, and
// the public post the model proposes next is refused. A name the manifest does not declare is
// model text: it raises nothing by name and never reaches the ledger.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startFakeModel, type FakeModel } from '../helpers/fake-model.js';
import { anthropicAgent, llmSetup, openaiAgent, startLlmGate } from '../helpers/llm-gate.js';
import { anthropicTurn, openaiTurn, responsesTurn, type Format, type History, type Turn } from '../helpers/llm-agent.js';
import { decisions, ledgerOf } from '../helpers/support-desk.js';

const SECRET = 'name,salary\nalice,100';
const TOOL_CANARY = 'tool-canary-3b8e51d2';
const READ = { calls: [{ name: 'read_file', arguments: { path: '/srv/payroll.csv' }, id: 'call_read_payroll' }] };
const POST = { calls: [{ name: 'post_public', arguments: { text: 'status: green' }, id: 'call_post_status' }] };

let fake: FakeModel;
before(async () => void (fake = await startFakeModel()));
after(() => fake?.close());

/** The history an agent sends back after running `tool` under `id`, in each format's shape. */
const HISTORY: Record<Format, (tool: string, id: string) => unknown[]> = {
  openai: (tool, id) => [
    { role: 'user', content: 'payroll?' },
    { role: 'assistant', content: null, tool_calls: [{ id, type: 'function', function: { name: tool, arguments: '{"path":"/srv/payroll.csv"}' } }] },
    { role: 'tool', tool_call_id: id, content: SECRET },
  ],
  responses: (tool, id) => [
    { role: 'user', content: 'payroll?' },
    { type: 'function_call', call_id: id, name: tool, arguments: '{"path":"/srv/payroll.csv"}' },
    { type: 'function_call_output', call_id: id, output: SECRET },
  ],
  anthropic: (tool, id) => [
    { role: 'user', content: 'payroll?' },
    { role: 'assistant', content: [{ type: 'tool_use', id, name: tool, input: { path: '/srv/payroll.csv' } }] },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: id, content: SECRET }] },
  ],
};

const TURN: Record<Format, (base: string, script: object, h?: History) => Promise<Turn>> = {
  openai: (base, script, h) => openaiTurn(openaiAgent(base), script, false, h),
  responses: (base, script, h) => responsesTurn(openaiAgent(base), script, true, h),
  anthropic: (base, script, h) => anthropicTurn(anthropicAgent(base), script, false, h),
};

for (const format of ['openai', 'responses', 'anthropic'] as const) {
  test(`${format}: after a restart, a result the history names read_file raises the label by read_file; the public post is refused`, { timeout: 120_000 }, async () => {
    const s = llmSetup();
    const first = await startLlmGate(s, fake.url);
    try {
      assert.deepEqual((await TURN[format](first.url, READ)).calls.map((c) => c.name), ['read_file']);
    } finally {
      await first.stop();
    }
    const messages = HISTORY[format]('read_file', 'call_read_payroll');
    assert.deepEqual((await TURN[format](fake.url, POST, { messages })).calls.map((c) => c.name), ['post_public'], 'positive control');
    const g = await startLlmGate(s, fake.url);
    try {
      // A made-up call of a tool the manifest does not declare: nothing rises by its name.
      const other = HISTORY[format](TOOL_CANARY, 'call_other_1');
      assert.deepEqual((await TURN[format](g.url, POST, { messages: other })).calls.map((c) => c.name), ['post_public']);
      const made = decisions(s.home).length;
      const turn = await TURN[format](g.url, POST, { messages });
      assert.deepEqual(turn.calls, []);
      assert.match(turn.text, /cloakpipe refused post_public: sink_ceiling_exceeded: /);
      assert.deepEqual(decisions(s.home).slice(made).map((d) => [d.tool, d.reason]), [['post_public', 'sink_ceiling_exceeded']]);
    } finally {
      await g.stop();
    }
    const entries = ledgerOf(s.home);
    const labels = entries.filter((e) => e.kind === 'label').map((e) => [e.from, e.to, e.tool]);
    assert.deepEqual(labels, [['public', 'confidential', 'read_file']], 'one rise, after the restart, by read_file');
    assert.ok(!JSON.stringify(entries).includes(TOOL_CANARY), 'no undeclared name in the ledger');
    assert.ok(!JSON.stringify(entries).includes('alice,100'), 'no result text in the ledger');
  });
}
