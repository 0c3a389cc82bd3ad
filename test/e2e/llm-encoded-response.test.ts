// A model API whose success is content-encoded though the gate asked for identity: fetch
// decodes some encodings (one or more of gzip, deflate, br) and passes others through, so
// the gate must not read one body while the agent's SDK reads another. Every encoded success
// is refused fail_closed, never passed on; straight from the API the SDK reads the call.
// `identity` is no encoding (RFC 9110 8.4.1): a body sent under it is read and decided.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { brotliCompressSync, gzipSync } from 'node:zlib';
import { listenLocal } from '../helpers/local-http.js';
import { llmSetup, openaiAgent, startLlmGate, type LlmGate, type LlmSetup } from '../helpers/llm-gate.js';
import { openaiTurn } from '../helpers/llm-agent.js';
import { decisions } from '../helpers/support-desk.js';

const BODY = JSON.stringify({
  id: 'chatcmpl-encoded',
  object: 'chat.completion',
  created: 1764547200,
  model: 'gpt-4o-2024-08-06',
  choices: [{ index: 0, message: { role: 'assistant', content: null, tool_calls: [{ id: 'call_enc', type: 'function', function: { name: 'shell_exec', arguments: '{"cmd":"id"}' } }], refusal: null }, logprobs: null, finish_reason: 'tool_calls' }],
  usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
});

/** Each content-encoding header and the body sent under it (codings applied in the order listed). */
const ENCODINGS: { header: string; body: Buffer }[] = [
  { header: 'gzip', body: gzipSync(BODY) },
  { header: 'br, gzip', body: gzipSync(brotliCompressSync(BODY)) },
  { header: 'gzip, gzip', body: gzipSync(gzipSync(BODY)) },
  { header: 'GZIP', body: gzipSync(BODY) },
  { header: 'x-unknown', body: Buffer.from(BODY) },
  { header: 'identity, gzip', body: gzipSync(BODY) },
  { header: 'gzip, identity', body: gzipSync(BODY) },
];

/** Headers that name no encoding: the body is the model's JSON as it is. */
const IDENTITY = ['identity', 'Identity', 'identity, identity'];

let model: { url: string; close(): Promise<void> };
let s: LlmSetup;
let gate: LlmGate;
let current = ENCODINGS[0];

before(async () => {
  model = await listenLocal(
    createServer((req, res) => {
      req.resume();
      res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': current.header, 'content-length': String(current.body.length) });
      res.end(current.body);
    }),
  );
  s = llmSetup();
  gate = await startLlmGate(s, model.url);
});
after(async () => {
  await gate?.stop();
  await model?.close();
});

const calls = async (base: string) => (await openaiTurn(openaiAgent(base), { text: 'hi' }, false)).calls.map((c) => c.name);

for (const e of ENCODINGS) {
  test(`a success sent with content-encoding: ${e.header} is refused fail_closed, never passed on`, async () => {
    current = e;
    if (e.header === 'gzip') assert.deepEqual(await calls(model.url), ['shell_exec'], 'positive control');
    const made = decisions(s.home).length;
    await assert.rejects(calls(gate.url), (err: { status?: number; error?: { code?: string } }) => err.status === 502 && err.error?.code === 'fail_closed');
    assert.deepEqual(decisions(s.home).slice(made).map((d) => [d.outcome, d.reason]), [['refuse', 'fail_closed']]);
  });
}

for (const header of IDENTITY) {
  test(`a success sent with content-encoding: ${header} is read and its call decided`, async () => {
    current = { header, body: Buffer.from(BODY) };
    const made = decisions(s.home).length;
    // shell_exec is not in the manifest: decided, refused, and the refusal rewritten into the text.
    const turn = await openaiTurn(openaiAgent(gate.url), { text: 'hi' }, false);
    assert.deepEqual(turn.calls, []);
    assert.match(turn.text, /^cloakpipe refused shell_exec: undeclared_tool: /);
    assert.equal(turn.finish, 'stop');
    assert.deepEqual(decisions(s.home).slice(made).map((d) => [d.outcome, d.reason]), [['refuse', 'undeclared_tool']]);
  });
}
