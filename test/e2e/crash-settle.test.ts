// Crash test for the one-commit call path (ADR 017): the gate answers the host as soon as the
// upstream answers and commits the result entry and the operation's settlement with the next
// group. The real gate binary is SIGKILLed at random instants during a stream of write calls
// (an upstream that records every side effect), restarted, and every call is retried:
// - no side effect ran twice (the upstream's own record);
// - every result the host saw is what the record says: the retry replays exactly that result,
//   or the operation is `unknown` (reconcile_before_retry), never a second, different run;
// - the chain and every signature verify after all the crashes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cloakpipe } from '../helpers/cli.js';
import { call, records, setup, startGate, writeStream, type Sent } from '../helpers/recording-gate.js';

const ROUNDS = 4;
// Eight lanes: groups long enough to be sealed on the signing thread as they are appended (ADR 042).
const LANES = 8;

test('crash: SIGKILL at random instants while results are committed with the next group → nothing runs twice, nothing the host saw is contradicted, the chain verifies', async (t) => {
  const s = setup();
  const all: Sent[] = [];
  let windowsHit = 0; // results the host saw whose settlement the crash lost (operation unknown)
  for (let round = 0; round < ROUNDS; round++) {
    const g = await startGate(s);
    const sent: Sent[] = [];
    const stop = { now: false };
    const running = writeStream(g, `r${round}`, sent, stop, { lanes: LANES, timeoutMs: 15_000 });
    // A random instant once the stream is under way: after the round's first answer (a busy or
    // slow machine may take longer than the whole window to answer its first call).
    for (const end = Date.now() + 60_000; !sent.some((c) => c.seen?.ok) && Date.now() < end; ) await new Promise((r) => setTimeout(r, 5));
    await new Promise((r) => setTimeout(r, Math.floor(Math.random() * 400)));
    process.kill(g.pid, 'SIGKILL');
    stop.now = true;
    await running;
    await g.close();
    all.push(...sent);

    // Restart and retry every call of this round once.
    const g2 = await startGate(s);
    try {
      for (const c of sent) {
        const retry = await call(g2, 'write_note', { text: `note ${c.key}`, key: c.key });
        const ran = records(s).filter((r) => r.arguments.key === c.key).length;
        assert.ok(ran <= 1, `${c.key}: the side effect ran ${ran} times`);
        if (c.seen?.ok) {
          if (retry.ok) assert.equal(retry.text, c.seen.text, `${c.key}: the retry replays exactly the result the host saw`);
          else {
            assert.equal(retry.reason, 'reconcile_before_retry', `${c.key}: ${JSON.stringify(retry)}`);
            windowsHit++;
          }
        } else if (!retry.ok) {
          assert.equal(retry.reason, 'reconcile_before_retry', `${c.key}: ${JSON.stringify(retry)}`);
        }
        if (!retry.ok) {
          const show = cloakpipe(['ops', 'show', c.key, '--json', '--home', s.home]);
          assert.equal(show.status, 0, show.stderr);
          assert.equal(JSON.parse(show.stdout).state, 'unknown', `${c.key}: refused only because its outcome is unknown`);
        }
      }
    } finally {
      await g2.close();
    }
  }
  // Every side effect at most once over the whole run.
  const counts = new Map<string, number>();
  for (const r of records(s)) counts.set(String(r.arguments.key), (counts.get(String(r.arguments.key)) ?? 0) + 1);
  for (const [k, n] of counts) assert.ok(n <= 1, `${k} ran ${n} times`);
  assert.ok(all.some((c) => c.seen?.ok), 'the stream reached the upstream before the crashes');

  const v = cloakpipe(['verify', '--home', s.home], { timeout: 120_000 });
  assert.equal(v.status, 0, `verify after ${ROUNDS} crashes: ${v.stdout}\n${v.stderr}`);
  t.diagnostic(`${all.length} calls over ${ROUNDS} crashes; ${all.filter((c) => c.seen?.ok).length} answered; ${windowsHit} answered calls whose settlement the crash lost (became unknown)`);
});
