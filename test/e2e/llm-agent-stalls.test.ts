// An agent that stops reading a stream (the official SDK's stream, never iterated) while the
// model API keeps sending: the gate stops reading the model API once the agent's socket is
// full, and holds that response no longer than --stream-timeout. It cuts the agent off, records
// the cut as a fail_closed refusal and lets go of the model API's response; the agent that reads
// again then meets an error, never the rest of the stream unread by the gate.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type ServerResponse } from 'node:http';
import { listenLocal } from '../helpers/local-http.js';
import { llmSetup, openaiAgent, startLlmGate } from '../helpers/llm-gate.js';
import { decisions } from '../helpers/support-desk.js';

const CHUNK = { id: 'chatcmpl-flood', object: 'chat.completion.chunk', created: 1764547200, model: 'gpt-4o-2024-08-06' };
/** The most the model API sends (the gate stops reading long before). */
const MAX_BYTES = 512 * 1024 * 1024;

/** A model API that streams text until its response is closed, as fast as it is read. */
async function floodingModel(): Promise<{ url: string; closed: Promise<void>; close(): Promise<void> }> {
  let closed!: () => void;
  const gone = new Promise<void>((r) => (closed = r));
  const server = createServer((req, res: ServerResponse) => {
    req.resume();
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.on('close', closed);
    const text = 'x'.repeat(64 * 1024);
    const event = Buffer.from(`data: ${JSON.stringify({ ...CHUNK, choices: [{ index: 0, delta: { content: text }, logprobs: null, finish_reason: null }] })}\n\n`);
    let sent = 0;
    const pump = () => {
      while (!res.destroyed && sent < MAX_BYTES) {
        sent += event.length;
        if (!res.write(event)) return void res.once('drain', pump);
      }
      res.end();
    };
    pump();
  });
  const { url, close } = await listenLocal(server);
  return { url, closed: gone, close };
}

/** `check` until it holds, for at most `ms` (a hung case fails, not hangs); a check that throws has not held yet. */
async function eventually(check: () => boolean, ms: number, what: string): Promise<void> {
  const holds = () => {
    try {
      return check();
    } catch {
      return false;
    }
  };
  for (const end = Date.now() + ms; !holds(); ) {
    if (Date.now() > end) assert.fail(`not within ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

test('an agent that stops reading a stream is cut at --stream-timeout, the cut recorded, the model API let go', { timeout: 180_000 }, async () => {
  const model = await floodingModel();
  const s = llmSetup();
  const g = await startLlmGate(s, model.url, ['--stream-timeout', '3s']);
  try {
    const agent = openaiAgent(g.url);
    // The SDK answers once the headers came; nothing reads the stream after that.
    const stream = await agent.chat.completions.create({ model: 'gpt-4o-2024-08-06', messages: [{ role: 'user', content: 'hi' }], stream: true });
    await eventually(() => decisions(s.home).some((e) => e.outcome === 'refuse' && e.reason === 'fail_closed'), 60_000, 'the cut recorded while the agent still holds the stream');
    await Promise.race([model.closed, new Promise((_, fail) => setTimeout(() => fail(new Error('the model API response was never let go')), 30_000))]);
    // Read again: what was buffered, then an error (the connection was cut), never a clean end.
    await assert.rejects(
      (async () => {
        for await (const _ of stream);
      })(),
    );
  } finally {
    await g.stop();
    await model.close();
  }
});
