// Crash test of a fleet (fleet.md, ADR 016, ADR 030): three gates (the real binary) on one
// PostgreSQL database of the test's own, streams of write calls whose operation ids overlap
// across gates, a gate SIGKILLed at a random instant in every round and restarted, and
// PostgreSQL itself restarted under the running gates in one round. Bounded: four rounds of
// CALLS_PER_ROUND calls each (thousands in all), each capped at ROUND_CAP_MS. The upstream records every side effect before acting. Then:
// - no side effect ran twice (the upstream's record);
// - every answer a host saw for an operation is the one execution's result, and a retry now
//   replays exactly it, or is refused reconcile_before_retry because the outcome is unknown;
// - refusals during the run are only reconcile_before_retry (another gate's call in flight, or
//   unknown) and fail_closed (the database restarting);
// - no operation is left pending once the gates restarted, and every chain verifies.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { cloakpipe, tempDir } from '../helpers/cli.js';
import { call, records, setup, startGate, type Outcome, type RunningGate, type Setup } from '../helpers/recording-gate.js';
import { pgSkip } from '../store/postgres/pg.js';
import { freshDatabase, initGate, PG_SCRIPT, sql } from '../helpers/fleet.js';

const GATES = 3;
const ROUNDS = 4;
const LANES = 3;
const KEYS = 200;
/** Write calls each round carries before its SIGKILL (fleet.md: thousands over the run), capped in time. */
const CALLS_PER_ROUND = 600;
const ROUND_CAP_MS = 25_000;

interface Sent {
  key: string;
  gate: number;
  outcome?: Outcome;
  /** The gate died (or the connection dropped) under the call: the host saw nothing. */
  lost?: true;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test('fleet crash: gates SIGKILLed at random instants and PostgreSQL restarted mid-run → nothing ran twice, no answer contradicted, every chain verifies', pgSkip, async (t) => {
  const dir = tempDir('cloakpipe-fleet-crash-pg-');
  const base = execFileSync('bash', [PG_SCRIPT, 'start', dir], { encoding: 'utf8' }).trim();
  const gates: (RunningGate | null)[] = [];
  try {
    const url = await freshDatabase(base);
    const s = setup();
    const homes = Array.from({ length: GATES }, (_, i) => initGate(url, `gate-${i}`));
    const at = (i: number): Setup => ({ ...s, home: homes[i] });
    const start = (i: number) => startGate(at(i), { flags: ['--store', url], delayMs: 10 });
    for (let i = 0; i < GATES; i++) gates.push(await start(i));
    const sent: Sent[] = [];
    const keysUsed = new Set<string>();

    for (let round = 0; round < ROUNDS; round++) {
      const stop = { now: false };
      const lane = async (gi: number) => {
        const g = gates[gi]!;
        while (!stop.now) {
          const key = `r${round}-k${Math.floor(Math.random() * KEYS)}`;
          keysUsed.add(key);
          const c: Sent = { key, gate: gi };
          sent.push(c);
          let o: Outcome;
          try {
            o = await call(g, 'write_note', { text: `note ${key}`, key }, undefined, 30_000);
          } catch {
            c.lost = true;
            return;
          }
          // The SDK's own error when the gate process is gone: the host saw no answer.
          if (!o.ok && o.code === -32000 && /Connection closed/.test(o.message)) {
            c.lost = true;
            return;
          }
          c.outcome = o;
        }
      };
      const before = sent.length;
      const began = Date.now();
      const streams = Promise.all(gates.flatMap((_, gi) => Array.from({ length: LANES }, () => lane(gi))));
      while (sent.length - before < CALLS_PER_ROUND && Date.now() - began < ROUND_CAP_MS) await sleep(50);
      await sleep(Math.floor(Math.random() * 300)); // the kill lands at a random instant of the stream
      if (round === 1) {
        // The database goes away under the running gates and comes back; they go on.
        execFileSync('bash', [PG_SCRIPT, 'stop', dir]);
        await sleep(200);
        execFileSync('bash', [PG_SCRIPT, 'start', dir]);
        await sleep(200 + Math.floor(Math.random() * 300));
      }
      const victim = Math.floor(Math.random() * GATES);
      process.kill(gates[victim]!.pid, 'SIGKILL');
      await sleep(100 + Math.floor(Math.random() * 200));
      stop.now = true;
      await streams;
      await gates[victim]!.close();
      gates[victim] = await start(victim); // start-up marks its pending operations unknown
    }

    // Every operation once more, on a random gate.
    const retries = new Map<string, Outcome>();
    for (const key of keysUsed) retries.set(key, await call(gates[Math.floor(Math.random() * GATES)]!, 'write_note', { text: `note ${key}`, key }, undefined, 30_000));
    await Promise.all(gates.map((g) => g!.close()));
    // A gate started again finds the pending operations of the gates that stopped on this host.
    const again = await start(0);
    await again.close();

    const ran = new Map<string, number>();
    for (const r of records(s)) if (r.tool === 'write_note') ran.set(String(r.arguments.key), (ran.get(String(r.arguments.key)) ?? 0) + 1);
    for (const [k, n] of ran) assert.equal(n, 1, `${k} ran ${n} times`);

    const reasons = new Map<string, number>();
    const why = (o: Outcome & { ok: false }) => o.reason || `${o.code} ${o.message}`;
    for (const c of sent) if (c.outcome && !c.outcome.ok) reasons.set(why(c.outcome), (reasons.get(why(c.outcome)) ?? 0) + 1);
    for (const r of reasons.keys()) assert.ok(r === 'reconcile_before_retry' || r === 'fail_closed', `unexpected refusal ${r}: ${JSON.stringify([...reasons])}`);

    const ops = new Map((await sql(url, 'SELECT id, state FROM cloakpipe.operations')).map((r) => [r.id as string, r.state as string]));
    let unknownSeen = 0;
    for (const key of keysUsed) {
      const seen = sent.filter((c) => c.key === key && c.outcome?.ok).map((c) => (c.outcome as { text: string }).text);
      assert.ok(new Set(seen).size <= 1, `${key}: hosts saw different results ${JSON.stringify(seen)}`);
      if (seen.length > 0) assert.equal(ran.get(key), 1, `${key}: a host saw a result, so it ran once`);
      const state = ops.get(key);
      assert.notEqual(state, 'pending', `${key} is still pending after every gate restarted`);
      if (state === 'succeeded') assert.equal(ran.get(key), 1, `${key}: succeeded means it ran`);
      const retry = retries.get(key)!;
      if (retry.ok) {
        assert.equal(ran.get(key), 1, `${key}: a retry is a replay`);
        if (seen.length > 0) assert.equal(retry.text, seen[0], `${key}: the retry replays what the hosts saw`);
      } else {
        assert.equal(retry.reason, 'reconcile_before_retry', `${key}: ${JSON.stringify(retry)}`);
        if (seen.length > 0) unknownSeen++;
      }
    }

    const v = cloakpipe(['verify', '--store', url], { timeout: 120_000 });
    assert.equal(v.status, 0, v.stdout + v.stderr);
    assert.equal((v.stdout.match(/ledger verified/g) ?? []).length, GATES, v.stdout);
    t.diagnostic(
      `${sent.length} calls on ${keysUsed.size} operations over ${ROUNDS} rounds (${ROUNDS} SIGKILLs, 1 PostgreSQL restart): ` +
        `${sent.filter((c) => c.outcome?.ok).length} answered, ${sent.filter((c) => c.lost).length} lost with their gate, refusals ${JSON.stringify([...reasons])}, ` +
        `${ran.size} side effects, ${unknownSeen} answered operations whose settlement a crash lost (unknown)`,
    );
  } finally {
    await Promise.allSettled(gates.map((g) => g?.close()));
    execFileSync('bash', [PG_SCRIPT, 'stop', dir]);
  }
});
