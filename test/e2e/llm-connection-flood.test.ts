// A flood of idle connections to the LLM door. Each holds a descriptor in the gate, which its
// model API connections and databases need too; the 10 s bound on headers (ADR 068) frees them
// only after 10 s. --max-connections bounds them as it does the HTTP door's (ADR 085): one beyond
// is closed at once. Through the real binary: the flood is cut at the bound, the gate's
// descriptors stay within it, and once the flood goes the official SDK gets its call as before.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { floodIdle } from '../helpers/connection-flood.js';
import { startFakeModel } from '../helpers/fake-model.js';
import { llmSetup, openaiAgent, startLlmGate } from '../helpers/llm-gate.js';
import { openaiTurn } from '../helpers/llm-agent.js';

const CAP = 8;
const FLOOD = 40;

test(`--max-connections ${CAP}: of ${FLOOD} idle sockets, those past the bound are closed at once; then an agent calls as before`, { timeout: 90_000 }, async () => {
  const fake = await startFakeModel();
  const g = await startLlmGate(llmSetup(), fake.url, ['--max-connections', String(CAP)]);
  const url = new URL(g.url);
  try {
    await floodIdle(url, g.child.pid!, FLOOD, CAP, 'the gate');
    const turn = await openaiTurn(openaiAgent(g.url), { calls: [{ name: 'get_weather', arguments: { city: 'Oslo' } }] }, true);
    assert.deepEqual(turn.calls.map((c) => c.name), ['get_weather']);
  } finally {
    assert.equal(await g.stop(), 0);
    await fake.close();
  }
});
