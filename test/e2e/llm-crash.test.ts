// Crash test for the LLM door's durability claim: a proposed call reaches the agent only after
// its allow decision is durable. The real gate binary as `cloakpipe llm-proxy` is SIGKILLed at
// random instants while agents stream turns in every wire format (streamed and not), each turn
// proposing one call the policy allows and one it refuses; the gate is restarted on the same
// home for the next round. The agent's side is read byte by byte, so a call counts as released
// as soon as any byte of it arrived, even when the crash cut the response after it:
// - every call id the agent received has an allow decision for exactly that call in the ledger;
// - the refused call's id never reaches the agent, whole or cut;
// - the chain and every signature verify after each crash.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startFakeModel, type Script } from '../helpers/fake-model.js';
import { llmSetup, startLlmGate, API_KEY, LLM_CONTEXT } from '../helpers/llm-gate.js';
import { anthropicParams, COMBOS, openaiParams, responsesParams, type Format } from '../helpers/llm-agent.js';
import { decisions } from '../helpers/gate.js';
import { cloakpipe } from '../helpers/cli.js';
import { fingerprintOf } from '../../src/core/call.js';

const ROUNDS = 6;
const LANES = 4;

interface Turned {
  city: string;
  allowedId: string;
  refusedId: string;
  /** Every byte the agent received before the response ended or the gate died. */
  bytes: string;
  /** The response ended whole. */
  whole: boolean;
}

/** One turn over raw HTTP, its bytes kept as they arrive. */
async function turn(url: string, format: Format, stream: boolean, key: string): Promise<Turned> {
  const t: Turned = { city: `city-${key}`, allowedId: `call_A${key}z`, refusedId: `call_R${key}z`, bytes: '', whole: false };
  const script: Script = {
    text: 'Checking. ',
    calls: [
      { id: t.allowedId, name: 'get_weather', arguments: { city: t.city } },
      { id: t.refusedId, name: 'transfer', arguments: { amount: 5000 } },
    ],
    split: 4,
    delayMs: 2,
  };
  const anthropic = format === 'anthropic';
  const path = { openai: '/v1/chat/completions', responses: '/v1/responses', anthropic: '/v1/messages' }[format];
  const params = { openai: openaiParams, responses: responsesParams, anthropic: anthropicParams }[format](script, stream);
  try {
    const r = await fetch(`${url}${path}`, {
      method: 'POST',
      headers: anthropic
        ? { 'content-type': 'application/json', 'x-api-key': API_KEY, 'anthropic-version': '2023-06-01' }
        : { 'content-type': 'application/json', authorization: `Bearer ${API_KEY}` },
      body: JSON.stringify(params),
    });
    const reader = r.body!.getReader();
    const text = new TextDecoder();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      t.bytes += text.decode(value, { stream: true });
    }
    t.whole = r.status === 200;
  } catch {
    // The gate died under the turn: t.bytes holds what the agent got before.
  }
  return t;
}

test('crash: SIGKILL at random instants while agents stream turns → every call the agent received was allowed and recorded first, no refused call leaks, the chain verifies', async () => {
  const fake = await startFakeModel();
  const s = llmSetup();
  const turns: Turned[] = [];
  let cut = 0; // turns the crash ended before their response did
  try {
    for (let round = 0; round < ROUNDS; round++) {
      const gate = await startLlmGate(s, fake.url);
      const stop = { now: false };
      let n = 0;
      const lane = async (l: number) => {
        while (!stop.now) {
          const { format, stream } = COMBOS[n % COMBOS.length];
          const t = await turn(gate.url, format, stream, `${round}-${l}-${n++}`);
          turns.push(t);
          if (!t.whole) cut++;
        }
      };
      const lanes = Promise.all(Array.from({ length: LANES }, (_, l) => lane(l)));
      // A random instant once turns are under way (a busy machine may take a while to answer the first).
      for (const end = Date.now() + 60_000; !turns.some((t) => t.whole) && Date.now() < end; ) await new Promise((r) => setTimeout(r, 5));
      await new Promise((r) => setTimeout(r, Math.floor(Math.random() * 500)));
      gate.child.kill('SIGKILL');
      stop.now = true;
      await gate.exited;
      await lanes;
      const v = cloakpipe(['verify', '--home', s.home]);
      assert.equal(v.status, 0, `round ${round}: ${v.stdout}${v.stderr}`);
    }

    const allowed = new Set(decisions(s.home).filter((e) => e.outcome === 'allow').map((e) => e.fingerprint));
    let released = 0;
    for (const t of turns) {
      assert.ok(!t.bytes.includes(t.refusedId), `the refused call ${t.refusedId} reached the agent: ${t.bytes}`);
      if (!t.bytes.includes(t.allowedId)) continue;
      released++;
      const fp = fingerprintOf('get_weather', { city: t.city }, LLM_CONTEXT.task.id);
      assert.ok(allowed.has(fp), `${t.allowedId} reached the agent without a durable allow decision${t.whole ? '' : ' (response cut by the crash)'}`);
    }
    // The test saw what it claims to have seen: calls released, and turns the crash cut short.
    assert.ok(released > 0, 'no call reached the agent');
    assert.ok(cut > 0, 'no crash landed under a turn');
  } finally {
    await fake.close();
  }
});
