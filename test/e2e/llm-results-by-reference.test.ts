// A tool result the agent sends back may hand the model its content by reference: a file the
// model API stores (file_id), a URL it fetches (file_url, an image URL, an Anthropic document or
// image whose source is a url or a file). The model reads that content; the gate never does,
// so no classify rule can read it. It counts as matching the highest rule that could raise the
// label (ADR 103), as output too large to scan does (ADR 003): the public post the model
// proposes next is refused. So does inline media that is not text, an image or a PDF (ADR 114);
// inline text (a text data: URL or base64 document) is read as before.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startFakeModel, type FakeModel } from '../helpers/fake-model.js';
import { anthropicAgent, LLM_CONTEXT, LLM_MANIFEST, LLM_POLICY, openaiAgent, startLlmGate } from '../helpers/llm-gate.js';
import { anthropicTurn, openaiTurn, responsesTurn, type Format, type History, type Turn } from '../helpers/llm-agent.js';
import { fixtureFiles } from '../helpers/cli.js';
import { ledgerOf } from '../helpers/support-desk.js';

const MANIFEST = `${LLM_MANIFEST}classify:\n  - { label: internal, pattern: "ACCT-[0-9]{8}" }\n`;
const WEATHER = { calls: [{ name: 'get_weather', arguments: { city: 'Oslo' }, id: 'call_weather_1' }] };
const POST = { calls: [{ name: 'post_public', arguments: { text: 'status: green' }, id: 'call_post_1' }] };
const PNG = 'data:image/png;base64,iVBORw0KGgo=';

let fake: FakeModel;
before(async () => void (fake = await startFakeModel()));
after(() => fake?.close());

/** The history after get_weather ran, its result `content` in the format's own shape. */
const HISTORY: Record<Format, (content: unknown) => unknown[]> = {
  openai: (content) => [
    { role: 'assistant', content: null, tool_calls: [{ id: 'call_weather_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } }] },
    { role: 'tool', tool_call_id: 'call_weather_1', content },
  ],
  responses: (content) => [
    { type: 'function_call', call_id: 'call_weather_1', name: 'get_weather', arguments: '{"city":"Oslo"}' },
    { type: 'function_call_output', call_id: 'call_weather_1', output: content },
  ],
  anthropic: (content) => [
    { role: 'assistant', content: [{ type: 'tool_use', id: 'call_weather_1', name: 'get_weather', input: { city: 'Oslo' } }] },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_weather_1', content }] },
  ],
};

const TURN: Record<Format, (base: string, script: object, h?: History) => Promise<Turn>> = {
  openai: (base, script, h) => openaiTurn(openaiAgent(base), script, false, h),
  responses: (base, script, h) => responsesTurn(openaiAgent(base), script, true, h),
  anthropic: (base, script, h) => anthropicTurn(anthropicAgent(base), script, false, h),
};

/** Results by reference, each format's; then the inline control, which raises nothing. */
const BY_REFERENCE: Record<Format, [string, unknown][]> = {
  openai: [
    ['a file part by file_id', [{ type: 'file', file: { file_id: 'file-7Qk2' } }]],
    ['an image_url part by URL', [{ type: 'image_url', image_url: { url: 'https://files.example/chart.png' } }]],
  ],
  responses: [
    ['input_file by file_id', [{ type: 'input_file', file_id: 'file-7Qk2' }]],
    ['input_file by file_url', [{ type: 'input_file', file_url: 'https://files.example/report.pdf' }]],
    ['input_image by URL', [{ type: 'input_image', image_url: 'https://files.example/chart.png', detail: 'auto' }]],
    ['input_image by file_id', [{ type: 'input_image', file_id: 'file-7Qk2', detail: 'auto' }]],
  ],
  anthropic: [
    ['a document whose source is a url', [{ type: 'document', source: { type: 'url', url: 'https://files.example/report.pdf' } }]],
    ['an image whose source is a file', [{ type: 'image', source: { type: 'file', file_id: 'file_011CNha8iCJcU1wXNR6q4V8w' } }]],
  ],
};
// Inline media that is not text (ADR 114): the model reads the page or the picture, the gate
// reads bytes. Before, each raised nothing and the public post went out.
const PDF = 'data:application/pdf;base64,JVBERi0xLjQK';
const OPAQUE_INLINE: Record<Format, [string, unknown][]> = {
  openai: [
    ['a file part with a PDF inline', [{ type: 'file', file: { filename: 'report.pdf', file_data: PDF } }]],
    ['an image_url part inline', [{ type: 'image_url', image_url: { url: PNG } }]],
  ],
  responses: [
    ['input_file with a PDF inline', [{ type: 'input_file', filename: 'report.pdf', file_data: PDF }]],
    ['input_image inline', [{ type: 'input_image', image_url: PNG, detail: 'auto' }]],
  ],
  anthropic: [
    ['a PDF document in base64', [{ type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: 'JVBERi0xLjQK' } }]],
    ['an image in base64', [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } }]],
  ],
};
const INLINE: Record<Format, unknown> = {
  openai: [{ type: 'text', text: 'sunny, 21 C' }],
  responses: [{ type: 'input_file', filename: 'weather.txt', file_data: `data:text/plain;base64,${Buffer.from('sunny, 21 C').toString('base64')}` }],
  anthropic: [{ type: 'document', source: { type: 'base64', media_type: 'text/plain', data: Buffer.from('sunny, 21 C').toString('base64') } }],
};

/** What the model proposes after get_weather's result `content` went back through a fresh gate. */
async function postAfter(format: Format, content: unknown) {
  const s = { ...fixtureFiles('cloakpipe-llm-ref-', { manifest: MANIFEST, policy: LLM_POLICY, context: LLM_CONTEXT }), spans: '' };
  const g = await startLlmGate(s, fake.url);
  try {
    assert.deepEqual((await TURN[format](g.url, WEATHER)).calls.map((c) => c.name), ['get_weather']);
    const turn = await TURN[format](g.url, POST, { messages: HISTORY[format](content) });
    return { turn, labels: ledgerOf(s.home).filter((e) => e.kind === 'label').map((e) => [e.from, e.to, e.cause]) };
  } finally {
    await g.stop();
  }
}

for (const format of ['openai', 'responses', 'anthropic'] as const) {
  for (const [what, content] of [...BY_REFERENCE[format], ...OPAQUE_INLINE[format]]) {
    test(`${format}: a result the gate cannot read (${what}) counts as the highest rule's; the public post is refused`, { timeout: 120_000 }, async () => {
      const { turn, labels } = await postAfter(format, content);
      assert.deepEqual(turn.calls, []);
      assert.match(turn.text, /cloakpipe refused post_public: sink_ceiling_exceeded: /);
      assert.deepEqual(labels, [['public', 'internal', 'classify']]);
    });
  }
  test(`${format}: an inline text result raises nothing (control)`, { timeout: 120_000 }, async () => {
    const { turn, labels } = await postAfter(format, INLINE[format]);
    assert.deepEqual(turn.calls.map((c) => c.name), ['post_public']);
    assert.deepEqual(labels, []);
  });
}
