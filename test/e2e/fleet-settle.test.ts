// What the store could not take when it came: a write call answered while its settlement cannot
// be recorded (the database slow past the bound just then), and a decision refused because its
// COMMIT went unanswered though the server did it. Either way the gate records what it knows once
// the database answers again, so the operation does not stay `pending` under a live gate (every
// retry refused reconcile_before_retry, `ops reconcile` refused "in flight on a running gate")
// until a restart.
// The real binary, a real PostgreSQL, the recording upstream as the witness of what ran.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { call, records, setup, startGate, waitFor } from '../helpers/recording-gate.js';
import { cloakpipe } from '../helpers/cli.js';
import { freezingProxy } from '../helpers/freezing-proxy.js';
import { pgSkip } from '../store/postgres/pg.js';
import { freshDatabase, initGate, sql } from '../helpers/fleet.js';

const opState = async (url: string, id: string) => (await sql(url, 'SELECT state FROM cloakpipe.operations WHERE id = $1', [id]))[0]?.state as string | undefined;

/** How many result entries of the chain have `outcome`. */
const results = async (url: string, outcome: string) =>
  (await sql(url, `SELECT count(*)::int AS n FROM cloakpipe.entries WHERE kind = 'result' AND body LIKE $1`, [`%"outcome":"${outcome}"%`]))[0].n as number;

/** The fleet's chains verify. */
function assertVerifies(url: string): void {
  const v = cloakpipe(['verify', '--store', url]);
  assert.equal(v.status, 0, v.stdout + v.stderr);
}

async function until(what: string, ms: number, cond: () => Promise<boolean>): Promise<void> {
  for (const end = Date.now() + ms; !(await cond()); await new Promise((r) => setTimeout(r, 50))) if (Date.now() > end) assert.fail(`timed out waiting for ${what}`);
}

test("fleet: a settlement the database refused is recorded once it answers again: the operation's retry replays, the tool ran once", { ...pgSkip, timeout: 120_000 }, async () => {
  const url = await freshDatabase();
  const s = setup();
  const home = initGate(url, 'gate-settle');
  const release = join(s.dir, 'release');
  const g = await startGate({ ...s, home }, { mode: 'held', releaseFile: release, flags: ['--store', `${url}?timeout=1s`] });
  const locker = new pg.Client({ connectionString: url });
  await locker.connect();
  const args = { text: 'ship order 7', key: 'op-settle' };
  try {
    const first = call(g, 'write_note', args, undefined, 60_000);
    await until('the operation to begin', 30_000, async () => (await opState(url, 'op-settle')) === 'pending');
    await waitFor(() => records(s).length === 1, 30_000, 'the call to reach the tool');
    // The operation's row held by another connection past the gate's bound: the settlement that
    // follows the reply waits for it and is refused.
    await locker.query('BEGIN');
    await locker.query(`SELECT 1 FROM cloakpipe.operations WHERE id = 'op-settle' FOR UPDATE`);
    writeFileSync(release, '');
    const answered = await first;
    assert.equal(answered.ok, true, JSON.stringify(answered));
    await until('the settlement to be refused', 30_000, async () => /store unavailable/.test(g.stderr()));
    await locker.query('COMMIT');
    await until('the settlement to be recorded', 60_000, async () => (await opState(url, 'op-settle')) === 'succeeded');
    const again = await call(g, 'write_note', args, undefined, 60_000);
    assert.equal(again.ok, true, JSON.stringify(again));
    assert.equal(again.ok && again.text, answered.ok && answered.text, 'the retry replays the stored result');
  } finally {
    await locker.end().catch(() => undefined);
    if (!existsSync(release)) writeFileSync(release, '');
    await g.close();
  }
  assert.equal(records(s).filter((r) => r.tool === 'write_note').length, 1, 'the tool ran once');
  assert.equal(await results(url, 'ok'), 1, 'one result entry for the one execution');
});

test('fleet: a decision whose COMMIT landed but whose answer was lost is refused fail_closed, and its operation is settled as not run (a retry runs it), not pending for the life of the gate', { ...pgSkip, timeout: 120_000 }, async () => {
  const url = await freshDatabase();
  const proxy = await freezingProxy(url);
  const s = setup();
  const home = initGate(url, 'gate-lost');
  const g = await startGate({ ...s, home }, { flags: ['--store', `${proxy.url}?timeout=1s`] });
  const args = { text: 'ship order 8', key: 'op-lost' };
  try {
    assert.equal((await call(g, 'read_note', { text: 'warm' }, undefined, 60_000)).ok, true);
    // Quiet: the read's result entry (it rides the next group) is in before the freeze is armed.
    await until('the first result entry', 30_000, async () => (await sql(url, `SELECT count(*)::int AS n FROM cloakpipe.entries WHERE kind = 'result'`))[0].n === 1);
    // The COMMIT statement itself (its query message ends with a NUL), not READ COMMITTED.
    proxy.freezeOn('COMMIT\0', { passing: true });
    const lost = await call(g, 'write_note', args, undefined, 60_000);
    assert.equal(!lost.ok && lost.reason, 'fail_closed', JSON.stringify(lost));
    // The server did commit the decision the gate refused: its operation is pending.
    await until('the decision to be committed', 30_000, async () => (await opState(url, 'op-lost')) === 'pending');
    proxy.thaw();
    // The gate refused it, so nothing ran: the attempt failed, and the agent's retry runs it.
    await until('the operation to be settled as not run', 60_000, async () => (await opState(url, 'op-lost')) === 'failed');
    const ran = await call(g, 'write_note', args, undefined, 60_000);
    assert.equal(ran.ok, true, JSON.stringify(ran));
  } finally {
    proxy.thaw();
    await g.close();
    await proxy.close();
  }
  assert.equal(records(s).filter((r) => r.tool === 'write_note').length, 1, 'the tool ran once: the retry');
  assert.equal(await results(url, 'not_forwarded'), 1, 'the withdrawn decision has its not_forwarded result');
  assertVerifies(url);
});

test('fleet: a settlement whose COMMIT landed but whose answer was lost is not recorded twice: one result entry for the call, and the retry replays', { ...pgSkip, timeout: 120_000 }, async () => {
  const url = await freshDatabase();
  const proxy = await freezingProxy(url);
  const s = setup();
  const home = initGate(url, 'gate-twice');
  const release = join(s.dir, 'release');
  const g = await startGate({ ...s, home }, { mode: 'held', releaseFile: release, flags: ['--store', `${proxy.url}?timeout=1s`] });
  const args = { text: 'ship order 9', key: 'op-twice' };
  try {
    const first = call(g, 'write_note', args, undefined, 60_000);
    await waitFor(() => records(s).length === 1, 30_000, 'the call to reach the tool');
    // The decision is in; the settlement that follows the reply is the next COMMIT: the server
    // does it, and its answer is held past the gate's bound.
    proxy.freezeOn('COMMIT\0', { passing: true });
    writeFileSync(release, '');
    const answered = await first;
    assert.equal(answered.ok, true, JSON.stringify(answered));
    await until('the settlement to be refused', 30_000, async () => /store unavailable/.test(g.stderr()));
    proxy.thaw();
    const again = await call(g, 'write_note', args, undefined, 60_000);
    assert.equal(again.ok && again.text, answered.ok && answered.text, 'the retry replays the stored result');
    // The kept settlement's next try (0.5 s on) finds its entry in the chain and adds nothing.
    await new Promise((r) => setTimeout(r, 2000));
  } finally {
    proxy.thaw();
    if (!existsSync(release)) writeFileSync(release, '');
    await g.close();
    await proxy.close();
  }
  assert.equal(records(s).filter((r) => r.tool === 'write_note').length, 1, 'the tool ran once');
  assert.equal(await results(url, 'ok'), 1, 'one result entry for the one execution');
  assertVerifies(url);
});
