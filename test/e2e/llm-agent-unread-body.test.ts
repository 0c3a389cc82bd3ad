// An agent that asks for a non-streamed answer and never reads it. The answer is large (a long
// text beside an allowed call), so most of it stays in the gate waiting for the agent's socket.
// The gate holds it no longer than --stream-timeout, as it does a stream (llm-agent-stalls): the
// connection is cut, the cut recorded fail_closed, and the call the body released, which never
// reached the agent whole, is withdrawn (not_forwarded) instead of waiting for a result.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import net from 'node:net';
import { listenLocal } from '../helpers/local-http.js';
import { llmSetup, startLlmGate, API_KEY } from '../helpers/llm-gate.js';
import { decisions, ledgerOf } from '../helpers/support-desk.js';

/** Far more than loopback socket buffers hold: most of it waits in the gate. */
const TEXT_BYTES = 16 * 1024 * 1024;
const BODY = Buffer.from(
  JSON.stringify({
    id: 'chatcmpl-large',
    object: 'chat.completion',
    created: 1764547200,
    model: 'gpt-4o-2024-08-06',
    choices: [
      {
        index: 0,
        message: { role: 'assistant', content: 'x'.repeat(TEXT_BYTES), tool_calls: [{ id: 'call_large_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } }], refusal: null },
        logprobs: null,
        finish_reason: 'tool_calls',
      },
    ],
    usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
  }),
);

/** `check` until it holds, for at most `ms` (a hung case fails, not hangs). */
async function eventually(check: () => boolean, ms: number, what: string): Promise<void> {
  for (const end = Date.now() + ms; !check(); ) {
    if (Date.now() > end) assert.fail(`not within ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

test('a non-streamed answer the agent does not read is cut at --stream-timeout, recorded, its call withdrawn', { timeout: 180_000 }, async () => {
  const model = await listenLocal(
    createServer((req, res) => {
      req.resume();
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(BODY.length) });
      res.end(BODY);
    }),
  );
  const s = llmSetup();
  const g = await startLlmGate(s, model.url, ['--stream-timeout', '10s', '--max-body', String(32 * 1024 * 1024)]);
  const url = new URL(g.url);
  const agent = net.connect(Number(url.port), url.hostname);
  try {
    // An agent that sends its request and reads nothing: the socket is never resumed.
    const request = JSON.stringify({ model: 'gpt-4o-2024-08-06', messages: [{ role: 'user', content: 'weather?' }] });
    agent.write(`POST /v1/chat/completions HTTP/1.1\r\nhost: ${url.host}\r\ncontent-type: application/json\r\nauthorization: Bearer ${API_KEY}\r\ncontent-length: ${Buffer.byteLength(request)}\r\n\r\n${request}`);
    agent.on('error', () => undefined);
    // The body is read and decided (its call allowed), written, and then cut at the deadline.
    await eventually(() => decisions(s.home).some((e) => e.tool === 'get_weather'), 60_000, 'the call decided');
    const allowed = decisions(s.home).find((e) => e.tool === 'get_weather');
    assert.equal(allowed?.outcome, 'allow');
    await eventually(() => decisions(s.home).some((e) => e.seq > allowed!.seq && e.outcome === 'refuse' && e.reason === 'fail_closed'), 60_000, 'the cut recorded while the agent still holds the connection');
    await eventually(() => ledgerOf(s.home).some((e) => e.kind === 'result' && e.decision === allowed?.seq), 30_000, 'the released call settled');
    assert.deepEqual(ledgerOf(s.home).filter((e) => e.kind === 'result' && e.decision === allowed?.seq).map((e) => e.outcome), ['not_forwarded']);
    // Read now: some of the answer, then the end, never the whole body the gate held.
    let read = 0;
    agent.on('data', (d: Buffer) => void (read += d.length));
    await new Promise<void>((resolve, reject) => {
      const t = setTimeout(() => reject(new Error('the connection was never closed')), 30_000);
      agent.on('close', () => (clearTimeout(t), resolve()));
    });
    assert.ok(read < BODY.length, `the agent read ${read} bytes of ${BODY.length}`);
  } finally {
    agent.destroy();
    await g.stop();
    await model.close();
  }
});
