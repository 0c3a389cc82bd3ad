// Crash test for the WAL's checkpoints (ADR 066). A checkpoint copies up to 4,000 pages from a
// database's WAL into its file and then syncs the file: the longest write the store makes, and
// one that crash-settle.test.ts's short streams rarely reach. Here every write_note answer is
// ~200 KB, stored for replay in operations.db, so that database crosses the threshold every ~80
// calls. The real gate binary is SIGKILLed just after the database file starts to change, which
// only a checkpoint does in WAL mode. The WAL index (sqlite.org/walformat.html) then shows
// whether the kill landed inside the checkpoint: one was attempted over frames it had not
// finished copying. The gate is restarted and every call is retried:
// - no side effect ran twice (the upstream's own record);
// - every answer the host saw is the answer the retry replays, byte for byte, or its operation is
//   `unknown` (reconcile_before_retry);
// - SQLite's integrity check holds for both databases, and the chain and every signature verify.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { cloakpipe } from '../helpers/cli.js';
import { call, records, setup, startGate, writeStream, type Sent } from '../helpers/recording-gate.js';

const ROUNDS = 3;
const LANES = 8;
const RESULT_BYTES = 200_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The file's size and time of change: in WAL mode only a checkpoint writes the database file. */
const stamp = (path: string) => {
  const s = statSync(path, { bigint: true });
  return `${s.size}:${s.mtimeNs}`;
};

/**
 * From a database's WAL index (its -shm file, native byte order): the WAL frames a checkpoint has
 * copied and synced (nBackfill, at 96) and those one has started to copy (nBackfillAttempted, at 128).
 */
function walIndex(db: string): { copied: number; attempted: number } {
  const shm = readFileSync(`${db}-shm`);
  return { copied: shm.readUInt32LE(96), attempted: shm.readUInt32LE(128) };
}

test('crash: SIGKILL while a WAL checkpoint copies pages into the database file → nothing runs twice, every answer the host saw is replayed byte for byte or unknown, both databases pass their integrity check, the chain verifies', async (t) => {
  const s = setup();
  const ops = join(s.home, 'operations.db');
  const all: Sent[] = [];
  let unknown = 0;
  let inside = 0; // kills that landed inside a checkpoint, by the WAL index
  for (let round = 0; round < ROUNDS; round++) {
    const g = await startGate(s, { env: { RECORDER_RESULT_BYTES: String(RESULT_BYTES) } });
    const before = stamp(ops);
    const sent: Sent[] = [];
    const stop = { now: false };
    const running = writeStream(g, `c${round}`, sent, stop, { lanes: LANES, timeoutMs: 30_000 });
    let checkpointing = false;
    for (const end = Date.now() + 120_000; !checkpointing && Date.now() < end; await sleep(1)) checkpointing = stamp(ops) !== before;
    // Into the checkpoint by a random few milliseconds: its page copies, or its sync of the file.
    if (checkpointing) await sleep(Math.floor(Math.random() * 10));
    process.kill(g.pid, 'SIGKILL');
    stop.now = true;
    await running;
    const wal = walIndex(ops); // before a restart recovers the WAL
    if (wal.attempted > wal.copied) inside++;
    await g.close();
    assert.ok(checkpointing, `round ${round}: operations.db was never checkpointed in 2 minutes of calls (${sent.length} sent)`);
    all.push(...sent);

    const g2 = await startGate(s, { env: { RECORDER_RESULT_BYTES: String(RESULT_BYTES) } });
    try {
      for (const c of sent) {
        const retry = await call(g2, 'write_note', { text: `note ${c.key}`, key: c.key }, undefined, 30_000);
        const ran = records(s).filter((r) => r.arguments.key === c.key).length;
        assert.ok(ran <= 1, `${c.key}: the side effect ran ${ran} times`);
        if (c.seen?.ok) {
          assert.ok(c.seen.text.length > RESULT_BYTES, `${c.key}: the host saw the whole answer`);
          if (retry.ok) assert.ok(retry.text === c.seen.text, `${c.key}: the retry replays exactly the answer the host saw`);
          else {
            assert.equal(retry.reason, 'reconcile_before_retry', `${c.key}: ${JSON.stringify(retry.reason)}`);
            unknown++;
          }
        } else if (!retry.ok) assert.equal(retry.reason, 'reconcile_before_retry', `${c.key}: ${JSON.stringify(retry.reason)}`);
      }
    } finally {
      await g2.close();
    }
    for (const file of ['ledger.db', 'operations.db']) {
      const db = new Database(join(s.home, file), { readonly: true });
      try {
        assert.deepEqual(db.pragma('integrity_check', { simple: true }), 'ok', `${file} after crash ${round}`);
      } finally {
        db.close();
      }
    }
  }
  const counts = new Map<string, number>();
  for (const r of records(s)) counts.set(String(r.arguments.key), (counts.get(String(r.arguments.key)) ?? 0) + 1);
  for (const [k, n] of counts) assert.ok(n <= 1, `${k} ran ${n} times`);
  assert.ok(inside >= 1, `no kill landed inside a checkpoint (a faster disk than this test expects?)`);

  const v = cloakpipe(['verify', '--home', s.home], { timeout: 120_000 });
  assert.equal(v.status, 0, `verify after ${ROUNDS} crashes in checkpoints: ${v.stdout}\n${v.stderr}`);
  t.diagnostic(`${all.length} calls over ${ROUNDS} crashes, ${inside} of them inside a checkpoint; ${all.filter((c) => c.seen?.ok).length} answered; ${unknown} answered calls whose settlement the crash lost (became unknown)`);
});
