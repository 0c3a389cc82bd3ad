// A flood of idle connections to the LLM door. Each holds a descriptor in the gate, which its
// model API connections and databases need too; the 10 s bound on headers (ADR 068) frees them
// only after 10 s. --max-connections bounds them as it does the HTTP door's (ADR 085): one beyond
// is closed at once. Through the real binary: the flood is cut at the bound, the gate's
// descriptors stay within it, and once the flood goes the official SDK gets its call as before.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import net from 'node:net';
import { startFakeModel } from '../helpers/fake-model.js';
import { llmSetup, openaiAgent, startLlmGate } from '../helpers/llm-gate.js';
import { openaiTurn } from '../helpers/llm-agent.js';

const CAP = 8;
const FLOOD = 40;

const descriptors = (pid: number) => readdirSync(`/proc/${pid}/fd`).length;

test(`--max-connections ${CAP}: of ${FLOOD} idle sockets, those past the bound are closed at once; then an agent calls as before`, { timeout: 90_000 }, async () => {
  const fake = await startFakeModel();
  const g = await startLlmGate(llmSetup(), fake.url, ['--max-connections', String(CAP)]);
  const url = new URL(g.url);
  try {
    const before = descriptors(g.child.pid!);
    let closed = 0;
    const sockets = await Promise.all(
      Array.from(
        { length: FLOOD },
        () =>
          new Promise<net.Socket>((resolve) => {
            const s = net.connect(Number(url.port), url.hostname, () => resolve(s));
            s.on('data', () => undefined); // read what the gate says, or its close is never seen
            s.on('close', () => closed++);
            s.on('error', () => undefined);
          }),
      ),
    );
    // Well inside the 10 s that the bound on headers gives an idle connection.
    const deadline = Date.now() + 5000;
    while (closed < FLOOD - CAP && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    assert.equal(closed, FLOOD - CAP, `of ${FLOOD} idle sockets, ${closed} were closed within 5 s`);
    const held = descriptors(g.child.pid!) - before;
    assert.ok(held <= CAP, `the gate holds ${held} more descriptors during the flood`);
    for (const s of sockets) s.destroy();
    const turn = await openaiTurn(openaiAgent(g.url), { calls: [{ name: 'get_weather', arguments: { city: 'Oslo' } }] }, true);
    assert.deepEqual(turn.calls.map((c) => c.name), ['get_weather']);
  } finally {
    assert.equal(await g.stop(), 0);
    await fake.close();
  }
});
