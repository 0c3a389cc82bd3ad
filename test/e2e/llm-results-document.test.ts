// An Anthropic tool_result may carry a text file inline as a document block whose source is
// base64 (`{type: 'base64', media_type: 'text/plain', data}`): the API decodes it and the model
// reads the text, so classify rules read it decoded too. Before, only its base64 was scanned and
// the public post the model proposed next went out. Real binary, official Anthropic SDK, the fake
// model API; a PDF's base64 counts as the highest rule's (ADR 114); text without a marker raises nothing.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startFakeModel, type FakeModel } from '../helpers/fake-model.js';
import { anthropicAgent, LLM_CONTEXT, LLM_MANIFEST, LLM_POLICY, startLlmGate } from '../helpers/llm-gate.js';
import { anthropicTurn } from '../helpers/llm-agent.js';
import { fixtureFiles } from '../helpers/cli.js';
import { ledgerOf } from '../helpers/support-desk.js';

const MANIFEST = `${LLM_MANIFEST}classify:\n  - { label: internal, pattern: "ACCT-[0-9]{8}" }\n`;
const POST = { calls: [{ name: 'post_public', arguments: { text: 'status: green' }, id: 'toolu_post_1' }] };
const MARKED = 'name,account\nquixote,ACCT-12345678\n';

let fake: FakeModel;
before(async () => void (fake = await startFakeModel()));
after(() => fake?.close());

const history = (media_type: string, text: string) => [
  { role: 'user', content: 'accounts?' },
  { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_read_1', name: 'get_weather', input: { city: 'Oslo' } }] },
  {
    role: 'user',
    content: [{ type: 'tool_result', tool_use_id: 'toolu_read_1', content: [{ type: 'document', source: { type: 'base64', media_type, data: Buffer.from(text).toString('base64') } }] }],
  },
];

const CASES = [
  ['text/plain holding a marker', 'text/plain', MARKED, true],
  // Not text the gate can read, read by the model all the same: as the highest rule's (ADR 114).
  ['application/pdf', 'application/pdf', MARKED, true],
  ['text/plain without a marker (control)', 'text/plain', 'name,account\nquixote,none\n', false],
] as const;
for (const [what, media, text, refused] of CASES) {
  test(`anthropic: a base64 document of ${what} in a tool result`, { timeout: 120_000 }, async () => {
    const s = { ...fixtureFiles('cloakpipe-llm-document-', { manifest: MANIFEST, policy: LLM_POLICY, context: LLM_CONTEXT }), spans: '' };
    const g = await startLlmGate(s, fake.url);
    let turn;
    try {
      turn = await anthropicTurn(anthropicAgent(g.url), POST, false, { messages: history(media, text) });
    } finally {
      await g.stop();
    }
    assert.deepEqual(turn.calls.map((x) => x.name), refused ? [] : ['post_public']);
    const labels = ledgerOf(s.home).filter((e) => e.kind === 'label').map((e) => [e.to, e.cause]);
    assert.deepEqual(labels, refused ? [['internal', 'classify']] : []);
    assert.ok(!JSON.stringify(ledgerOf(s.home)).includes('quixote'), 'no file text in the ledger');
  });
}
