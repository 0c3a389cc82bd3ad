// A model API whose stream reaches the gate a byte at a time: every event cut at every offset,
// CRLF line ends cut between CR and LF, and multi-byte UTF-8 (text and arguments in German,
// Japanese, emoji) cut inside a character. Through the real binary, each format streamed, the
// official SDK must read the same turn as from the same stream in one piece: the allowed call
// with its arguments intact, the refused one replaced by its refusal, the text unchanged. And
// the bounds, driven: an event, a body and a request of exactly --max-body pass, one byte more
// is refused, whole or cut a byte at a time.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { listenLocal } from '../helpers/local-http.js';
import { startFakeModel, type FakeModel, type Script } from '../helpers/fake-model.js';
import { anthropicAgent, llmSetup, openaiAgent, startLlmGate, type LlmGate, type LlmSetup } from '../helpers/llm-gate.js';
import { anthropicTurn, openaiTurn, responsesTurn, type Format, type Turn } from '../helpers/llm-agent.js';
import { decisions } from '../helpers/support-desk.js';

const SCRIPT: Script = {
  text: 'Grüße aus Zürich — 12 °C ☀️ 𝄞',
  calls: [
    { name: 'get_weather', arguments: { city: 'Zürich 東京 🌧️ Ḱ' }, id: 'call_split_weather' },
    { name: 'transfer', arguments: { amount: 5000 }, id: 'call_split_transfer' },
  ],
  after: 'Tschüß 👋',
  split: 1,
};

/** How the splitting model API writes what the fake one answered. */
let mode: { crlf: boolean; bytewise: boolean } = { crlf: false, bytewise: true };

/** A model API in front of the fake one that writes its answer a byte a write (CRLF line ends, if asked). */
async function splittingModel(fake: FakeModel): Promise<{ url: string; close(): Promise<void> }> {
  return listenLocal(
    createServer(async (req: IncomingMessage, res: ServerResponse) => {
      const chunks: Buffer[] = [];
      for await (const c of req) chunks.push(c as Buffer);
      const headers: Record<string, string> = {};
      for (const h of ['content-type', 'authorization', 'x-api-key', 'anthropic-version']) if (typeof req.headers[h] === 'string') headers[h] = req.headers[h] as string;
      const r = await fetch(`${fake.url}${req.url}`, { method: 'POST', headers, body: Buffer.concat(chunks) });
      const type = r.headers.get('content-type') ?? '';
      let bytes = Buffer.from(await r.arrayBuffer());
      // JSON strings hold no raw line end: every LF in a stream ends a line.
      if (mode.crlf && type.startsWith('text/event-stream')) bytes = Buffer.from(bytes.toString('latin1').replace(/\n/g, '\r\n'), 'latin1');
      res.writeHead(r.status, { 'content-type': type });
      res.socket?.setNoDelay(true);
      if (!mode.bytewise) return void res.end(bytes);
      for (const b of bytes) {
        res.write(Buffer.from([b]));
        await new Promise((ok) => setImmediate(ok));
      }
      res.end();
    }),
  );
}

let fake: FakeModel;
let splitter: { url: string; close(): Promise<void> };
let s: LlmSetup;
let whole: LlmGate;
let split: LlmGate;
before(async () => {
  fake = await startFakeModel();
  splitter = await splittingModel(fake);
  s = llmSetup();
  whole = await startLlmGate(llmSetup(), fake.url);
  split = await startLlmGate(s, splitter.url);
});
after(async () => {
  await split?.stop();
  await whole?.stop();
  await splitter?.close();
  await fake?.close();
});

const TURN: Record<Format, (base: string, script: Script) => Promise<Turn>> = {
  openai: (base, script) => openaiTurn(openaiAgent(base), script, true),
  responses: (base, script) => responsesTurn(openaiAgent(base), script, true),
  anthropic: (base, script) => anthropicTurn(anthropicAgent(base), script, true),
};

for (const format of ['openai', 'responses', 'anthropic'] as const) {
  for (const crlf of [false, true]) {
    test(`${format}, streamed a byte at a time${crlf ? ' with CRLF line ends' : ''}: the agent reads the turn it reads from the stream in one piece`, { timeout: 120_000 }, async () => {
      mode = { crlf, bytewise: true };
      const straight = await TURN[format](splitter.url, SCRIPT);
      assert.deepEqual(straight.calls.map((c) => c.name), ['get_weather', 'transfer'], 'positive control: the split stream reads whole');
      assert.deepEqual(straight.calls[0].args, SCRIPT.calls![0].arguments);
      const reference = await TURN[format](whole.url, SCRIPT);
      assert.deepEqual(reference.calls.map((c) => [c.name, c.args]), [['get_weather', SCRIPT.calls![0].arguments]]);
      const made = decisions(s.home).length;
      assert.deepEqual(await TURN[format](split.url, SCRIPT), reference);
      assert.deepEqual(decisions(s.home).slice(made).map((d) => [d.tool, d.outcome, d.reason ?? null]), [
        ['get_weather', 'allow', null],
        ['transfer', 'refuse', 'policy_denied'],
      ]);
    });
  }
}

// ── the bounds, driven ──────────────────────────────────────────────────────────────────────

const MAX = 4096;
const CHUNK = { id: 'chatcmpl-bound', object: 'chat.completion.chunk', created: 1764547200, model: 'gpt-4o-2024-08-06' };

const FINISH = `data: ${JSON.stringify({ ...CHUNK, choices: [{ index: 0, delta: {}, logprobs: null, finish_reason: 'stop' }] })}\n\n`;

/** A text chunk event of exactly `size` bytes. */
function eventOf(size: number): string {
  const shell = (text: string) => `data: ${JSON.stringify({ ...CHUNK, choices: [{ index: 0, delta: { role: 'assistant', content: text }, logprobs: null, finish_reason: null }] })}\n\n`;
  const ev = shell('x'.repeat(size - shell('').length));
  assert.equal(Buffer.byteLength(ev), size);
  return ev;
}

/** A non-streamed answer of exactly `size` bytes. */
function bodyOf(size: number): string {
  const shell = (text: string) =>
    JSON.stringify({ ...CHUNK, object: 'chat.completion', choices: [{ index: 0, message: { role: 'assistant', content: text, refusal: null }, logprobs: null, finish_reason: 'stop' }] });
  const body = shell('x'.repeat(size - shell('').length));
  assert.equal(Buffer.byteLength(body), size);
  return body;
}

test(`--max-body ${MAX}: an event, an answer and a request of exactly the bound pass; one byte more is refused, whole or a byte at a time`, { timeout: 120_000 }, async () => {
  let answer: { type: string; bytes: Buffer } = { type: '', bytes: Buffer.alloc(0) };
  let bytewise = false;
  const model = await listenLocal(
    createServer(async (req, res) => {
      for await (const _ of req);
      res.writeHead(200, { 'content-type': answer.type });
      res.socket?.setNoDelay(true);
      if (!bytewise) return void res.end(answer.bytes);
      for (const b of answer.bytes) {
        res.write(Buffer.from([b]));
        await new Promise((ok) => setImmediate(ok));
      }
      res.end();
    }),
  );
  const bs = llmSetup();
  const g = await startLlmGate(bs, model.url, ['--max-body', String(MAX)]);
  try {
    const agent = openaiAgent(g.url);
    const ask = (stream: boolean) => openaiTurn(agent, { text: 'hi' }, stream);
    for (bytewise of [false, true]) {
      for (const size of [MAX, MAX + 1]) {
        answer = { type: 'text/event-stream', bytes: Buffer.from(`${eventOf(size)}${FINISH}data: [DONE]\n\n`) };
        const made = decisions(bs.home).length;
        if (size === MAX) assert.equal((await ask(true)).text, JSON.parse(eventOf(size).slice(6)).choices[0].delta.content);
        else await assert.rejects(ask(true));
        assert.deepEqual(decisions(bs.home).slice(made).map((d) => d.reason), size === MAX ? [] : ['fail_closed'], `event of ${size} bytes${bytewise ? ', a byte at a time' : ''}`);
      }
      for (const size of [MAX, MAX + 1]) {
        answer = { type: 'application/json', bytes: Buffer.from(bodyOf(size)) };
        const made = decisions(bs.home).length;
        if (size === MAX) assert.equal((await ask(false)).finish, 'stop');
        else await assert.rejects(ask(false), (e: { status?: number }) => e.status === 502);
        assert.deepEqual(decisions(bs.home).slice(made).map((d) => d.reason), size === MAX ? [] : ['fail_closed'], `answer of ${size} bytes${bytewise ? ', a byte at a time' : ''}`);
      }
    }
    answer = { type: 'application/json', bytes: Buffer.from(bodyOf(400)) };
    for (const size of [MAX, MAX + 1]) {
      const shell = (text: string) => JSON.stringify({ model: 'm', messages: [{ role: 'user', content: text }] });
      const body = shell('y'.repeat(size - shell('').length));
      const r = await fetch(`${g.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
      assert.equal(r.status, size === MAX ? 200 : 413, `request of ${size} bytes`);
      await r.arrayBuffer();
    }
  } finally {
    await g.stop();
    await model.close();
  }
});
