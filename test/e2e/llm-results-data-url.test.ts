// A tool result may carry a text file inline as a base64 data: URL (OpenAI `input_file` with
// `file_data`, a Chat Completions `file` part): the model API decodes it and the model reads the
// text, so classify rules read it decoded too. Before, only its base64 was scanned and the public
// post the model proposed next went out. Real binary, official OpenAI SDK, the fake model API.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startFakeModel, type FakeModel } from '../helpers/fake-model.js';
import { LLM_CONTEXT, LLM_MANIFEST, LLM_POLICY, openaiAgent, startLlmGate } from '../helpers/llm-gate.js';
import { openaiTurn, responsesTurn } from '../helpers/llm-agent.js';
import { fixtureFiles } from '../helpers/cli.js';
import { ledgerOf } from '../helpers/support-desk.js';

const MANIFEST = `${LLM_MANIFEST}classify:\n  - { label: internal, pattern: "ACCT-[0-9]{8}" }\n`;
const WEATHER = { calls: [{ name: 'get_weather', arguments: { city: 'Oslo' }, id: 'call_weather_1' }] };
const POST = { calls: [{ name: 'post_public', arguments: { text: 'status: green' }, id: 'call_post_1' }] };
const b64 = (text: string) => Buffer.from(text).toString('base64');
const csv = (text: string) => `data:text/csv;base64,${b64(text)}`;
// The scheme in another case (RFC 2397 and RFC 3986 take any), and no media type (text/plain by
// RFC 2397): data: URLs all the same. Before, both were scanned as base64 only: no rise.
const mixedCase = (text: string) => `Data:text/csv;base64,${b64(text)}`;
const untyped = (text: string) => `data:;base64,${b64(text)}`;
// RFC 2397 without ;base64: the data is percent-encoded, every byte here. Before, scanned as written.
const escaped = (s: string) => [...Buffer.from(s)].map((b) => `%${b.toString(16).padStart(2, '0')}`).join('');
const percent = (text: string) => `data:text/csv,${escaped(text)}`;
// Base64 whose characters are percent-escaped, as a URL may carry its + / =. Before, read as base64 as written.
const escapedBase64 = (text: string) => `data:text/csv;base64,${escaped(b64(text))}`;
const MARKED = 'name,account\nquixote,ACCT-12345678\n';

let fake: FakeModel;
before(async () => void (fake = await startFakeModel()));
after(() => fake?.close());

const CASES = {
  responses: {
    turn: (base: string, script: object, messages?: unknown[]) => responsesTurn(openaiAgent(base), script, false, { messages }),
    history: (data: string) => [
      { type: 'function_call', call_id: 'call_weather_1', name: 'get_weather', arguments: '{"city":"Oslo"}' },
      { type: 'function_call_output', call_id: 'call_weather_1', output: [{ type: 'input_file', filename: 'accounts.csv', file_data: data }] },
    ],
  },
  openai: {
    turn: (base: string, script: object, messages?: unknown[]) => openaiTurn(openaiAgent(base), script, false, { messages }),
    history: (data: string) => [
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_weather_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } }] },
      { role: 'tool', tool_call_id: 'call_weather_1', content: [{ type: 'file', file: { filename: 'accounts.csv', file_data: data } }] },
    ],
  },
};

for (const [format, c] of Object.entries(CASES)) {
  const cases = [
    ['a marker', MARKED, true, csv],
    ['a marker, its scheme spelled Data:', MARKED, true, mixedCase],
    ['a marker, no media type', MARKED, true, untyped],
    ['a marker, percent-encoded', MARKED, true, percent],
    ['a marker, its base64 percent-escaped', MARKED, true, escapedBase64],
    ['no marker (control)', 'name,account\nquixote,none\n', false, csv],
  ] as const;
  for (const [what, text, refused, url] of cases) {
    test(`${format}: a text file given inline as a data: URL with ${what} is classified decoded`, { timeout: 120_000 }, async () => {
      const s = { ...fixtureFiles('cloakpipe-llm-data-', { manifest: MANIFEST, policy: LLM_POLICY, context: LLM_CONTEXT }), spans: '' };
      const g = await startLlmGate(s, fake.url);
      let turn;
      try {
        assert.deepEqual((await c.turn(g.url, WEATHER)).calls.map((x) => x.name), ['get_weather']);
        turn = await c.turn(g.url, POST, c.history(url(text)));
      } finally {
        await g.stop();
      }
      assert.deepEqual(turn.calls.map((x) => x.name), refused ? [] : ['post_public']);
      const labels = ledgerOf(s.home).filter((e) => e.kind === 'label').map((e) => [e.to, e.cause]);
      assert.deepEqual(labels, refused ? [['internal', 'classify']] : []);
      assert.ok(!JSON.stringify(ledgerOf(s.home)).includes('quixote'), 'no file text in the ledger');
    });
  }
}
