// Many large requests sent to the LLM door at once, each but for its last byte. Each body was
// read as it came, so --max-connections bodies of --max-body could be held at once (16 GiB at
// the defaults) by any local client. Large bodies now share a door-wide budget and wait unread
// in their sockets beyond it; the gate grows by about the budget, then every request reaches
// the model API and is answered.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { startFakeModel } from '../helpers/fake-model.js';
import { API_KEY, llmSetup, startLlmGate } from '../helpers/llm-gate.js';
import { rss } from '../helpers/proc-figures.js';

const MAX_BODY = 4 * 1024 * 1024;
const COUNT = 32;

/** A chat request of about MAX_BODY bytes sent but for its last byte; `finish()` sends it. */
function held(url: URL): { finish: () => void; answer: Promise<string> } {
  const body = Buffer.from(JSON.stringify({ model: 'gpt-4o-2024-08-06', messages: [{ role: 'system', content: 'x'.repeat(MAX_BODY - 400) }, { role: 'user', content: 'hi' }] }));
  const socket: Socket = connect(Number(url.port), url.hostname);
  socket.write(
    `POST /v1/chat/completions HTTP/1.1\r\nHost: ${url.host}\r\nContent-Type: application/json\r\nAuthorization: Bearer ${API_KEY}\r\n` +
      `Content-Length: ${body.length}\r\nConnection: close\r\n\r\n`,
  );
  socket.write(body.subarray(0, body.length - 1));
  let got = '';
  socket.on('data', (d: Buffer) => (got += d.toString('latin1')));
  socket.on('error', () => undefined);
  const answer = new Promise<string>((resolve) => socket.on('close', () => resolve(got)));
  return { finish: () => socket.write(body.subarray(body.length - 1)), answer };
}

test(`${COUNT} requests of ${MAX_BODY / 1048576} MiB at once: the gate holds a bounded part of them, then answers each`, { timeout: 180_000 }, async () => {
  const fake = await startFakeModel();
  const g = await startLlmGate(llmSetup(), fake.url, ['--max-body', String(MAX_BODY)]);
  try {
    const url = new URL(g.url);
    const before = rss(g.child.pid!);
    const posts = Array.from({ length: COUNT }, () => held(url));
    await new Promise((r) => setTimeout(r, 4000)); // every body but its last byte is sent
    const grown = rss(g.child.pid!) - before;
    assert.ok(grown < 80 * 1024 * 1024, `the gate grew by ${Math.round(grown / 1048576)} MiB while ${(COUNT * MAX_BODY) / 1048576} MiB of bodies were sent`);
    for (const p of posts) p.finish();
    const answers = await Promise.all(posts.map((p) => p.answer));
    assert.deepEqual(answers.map((a) => /^HTTP\/1\.1 (\d+) /.exec(a)?.[1]).filter((s) => s !== '200'), [], 'every request answered 200');
    assert.equal(fake.seen.length, COUNT, 'every request reached the model API');
  } finally {
    assert.equal(await g.stop(), 0);
    await fake.close();
  }
});
