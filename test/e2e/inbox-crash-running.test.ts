// A decision cut between the embedded store's two commits is completed while an inbox runs, not
// only when one starts again: two inboxes on one home, one killed inside its approval, and the
// other completes what the killed one's note says at its next read of the store, so the gate's
// retry is allowed without a restart. A note whose writer still runs is its decision in progress
// and is left alone (completing it beside the writer could drop a decision half made). Through
// the real binaries: the gate, inboxes killed by SIGKILL at the exact instant (a preloaded hook)
// and at random instants while the other runs and decides too.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pidSpace } from '../../src/inbox/decision-journal.js';
import { crashBetweenCommits } from '../helpers/crash-between-commits.js';
import { inboxClient, startInbox, type RunningInbox } from '../helpers/inbox-server.js';
import { call, ledger, records, setup, startGate, type Setup } from '../helpers/recording-gate.js';

interface Listed {
  requests: { id: string; entry: number }[];
}
type Api = Awaited<ReturnType<typeof inboxClient>>;

const listed = async (api: Api) => (JSON.parse((await api('/api/requests')).body) as Listed).requests;

/** Resolves once `check` holds, polling; rejects after `ms` (a hung case fails). */
async function until(check: () => boolean | Promise<boolean>, ms: number, what: string): Promise<void> {
  for (const end = Date.now() + ms; !(await check()); ) {
    if (Date.now() > end) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const notes = (s: Setup) => {
  const dir = join(s.home, 'inbox-decisions');
  return existsSync(dir) ? readdirSync(dir) : [];
};

test('an inbox killed between its two commits while another runs: the other completes the approval, and the retry runs once', { timeout: 120_000 }, async () => {
  const s = setup();
  const g = await startGate(s);
  let survivor: RunningInbox | undefined;
  try {
    const args = { to: 'cut-while-running@example.com' };
    const refused = await call(g, 'send_email', args);
    assert.ok(!refused.ok && refused.reason === 'approval_required');
    survivor = await startInbox({ home: s.home, approverKey: s.approverKey });
    const api = await inboxClient(survivor);
    const crashing = await startInbox({ home: s.home, approverKey: s.approverKey, env: crashBetweenCommits() });
    const [r] = await listed(await inboxClient(crashing));
    const cut = await (await inboxClient(crashing))(`/api/requests/${r.id}/approve`, 'POST').then(
      (a) => `answered ${a.status}`,
      () => 'cut',
    );
    assert.equal(cut, 'cut', 'the hook killed the inbox inside the approval');
    await crashing.exited;
    // The survivor was never restarted. Before, the request stayed listed and the retry was
    // refused approval_required until an inbox started again.
    await until(async () => (await listed(api)).length === 0 && notes(s).length === 0, 15_000, 'the running inbox completed the approval');
    assert.match(survivor.stderr(), /completed 1 decision\(s\) a stop had cut short/);
    const operator = ledger(s).filter((e) => e.kind === 'operator');
    assert.deepEqual(operator.map((e) => [e.action, e.request_entry]), [['approve', r.entry]]);
    const retries = [await call(g, 'send_email', args), await call(g, 'send_email', args)];
    assert.ok(retries[0].ok, JSON.stringify(retries[0]));
    assert.ok(!retries[1].ok && retries[1].reason === 'approval_invalid', JSON.stringify(retries[1]));
    assert.equal(records(s).filter((c) => c.arguments.to === args.to).length, 1, 'the call ran once');
  } finally {
    await survivor?.stop();
    await g.close();
  }
});

test('an inbox stopped between its two commits whose note still reads as its writer running (the instant a killed process has dropped its locks and is not yet gone): a decision on the same request keeps the first one, never a second', { timeout: 120_000 }, async () => {
  const s = setup();
  const g = await startGate(s);
  const alive = spawn('sleep', ['600'], { stdio: 'ignore' });
  let survivor: RunningInbox | undefined;
  try {
    const args = { to: 'cut-while-exiting@example.com' };
    const refused = await call(g, 'send_email', args);
    assert.ok(!refused.ok && refused.reason === 'approval_required');
    const crashing = await startInbox({ home: s.home, approverKey: s.approverKey, env: crashBetweenCommits() });
    const capi = await inboxClient(crashing);
    const [r] = await listed(capi);
    await capi(`/api/requests/${r.id}/approve`, 'POST').catch(() => undefined);
    await crashing.exited;
    // Its note renamed to name a process that runs: what /proc shows of a killed process for a
    // moment after its locks are released.
    const [cut] = notes(s);
    const stat = readFileSync(`/proc/${alive.pid}/stat`, 'utf8');
    const started = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
    const dir = join(s.home, 'inbox-decisions');
    const renamed = `${pidSpace()}-${alive.pid}-${started}-${cut.split('-').pop()}`;
    renameSync(join(dir, cut), join(dir, renamed));
    survivor = await startInbox({ home: s.home, approverKey: s.approverKey });
    const api = await inboxClient(survivor);
    // The ledger half committed; the request is still listed (its operations half did not).
    assert.deepEqual((await listed(api)).map((x) => x.id), [r.id]);
    const second = await api(`/api/requests/${r.id}/deny`, 'POST');
    assert.notEqual(second.status, 200, 'the request was decided already');
    // Before, the deny took the request and appended a second operator entry beside the approval.
    const operator = ledger(s).filter((e) => e.kind === 'operator');
    assert.deepEqual(operator.map((e) => [e.action, e.request_entry]), [['approve', r.entry]]);
    assert.deepEqual(await listed(api), []);
    assert.deepEqual(notes(s), [renamed], "a running writer's note is left to it");
    const retries = [await call(g, 'send_email', args), await call(g, 'send_email', args)];
    assert.ok(retries[0].ok, JSON.stringify(retries[0]));
    assert.ok(!retries[1].ok && retries[1].reason === 'approval_invalid', JSON.stringify(retries[1]));
    assert.equal(records(s).filter((c) => c.arguments.to === args.to).length, 1, 'the call ran once');
    alive.kill('SIGKILL');
    await until(() => notes(s).length === 0, 15_000, 'the note was dropped once its writer was gone');
    assert.equal(ledger(s).filter((e) => e.kind === 'operator').length, 1);
  } finally {
    alive.kill('SIGKILL');
    await survivor?.stop();
    await g.close();
  }
});

test("a note whose writer still runs is left alone by a running inbox, and completed once its writer is gone", { timeout: 60_000 }, async () => {
  const s = setup();
  const g = await startGate(s);
  const writer = spawn('sleep', ['600'], { stdio: 'ignore' });
  let survivor: RunningInbox | undefined;
  try {
    const refused = await call(g, 'send_email', { to: 'in-progress@example.com' });
    assert.ok(!refused.ok && refused.reason === 'approval_required');
    survivor = await startInbox({ home: s.home, approverKey: s.approverKey });
    const api = await inboxClient(survivor);
    const [r] = await listed(api);
    // A deny in progress in another process: nothing of it committed yet.
    const stat = readFileSync(`/proc/${writer.pid}/stat`, 'utf8');
    const started = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]; // field 22
    const dir = join(s.home, 'inbox-decisions');
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const name = `${pidSpace()}-${writer.pid}-${started}-0123456789abcdef01234567.json`;
    const head = Math.max(...ledger(s).map((e) => e.seq as number));
    writeFileSync(join(dir, name), JSON.stringify({ id: r.id, head, entry: { kind: 'operator', action: 'deny', request_entry: r.entry, fingerprint: 'sha256:0', tool: 'send_email' } }), { mode: 0o600 });
    // Several reads of the store later (one a second), the note is still there: its writer runs.
    await new Promise((res) => setTimeout(res, 3500));
    assert.deepEqual(notes(s), [name]);
    writer.kill('SIGKILL');
    await until(() => notes(s).length === 0, 15_000, 'the note was completed once its writer was gone');
    // Nothing of it had committed: the request still waits, no operator entry.
    assert.deepEqual((await listed(api)).map((x) => x.id), [r.id]);
    assert.equal(ledger(s).filter((e) => e.kind === 'operator').length, 0);
  } finally {
    writer.kill('SIGKILL');
    await survivor?.stop();
    await g.close();
  }
});

test('a note written in another pid space (another container or host on this home) is left alone while young, its pid naming no process here, and completed once older than a decision takes; one without a writer is completed at once', { timeout: 60_000 }, async () => {
  const s = setup();
  const g = await startGate(s);
  let survivor: RunningInbox | undefined;
  try {
    const refused = await call(g, 'send_email', { to: 'elsewhere@example.com' });
    assert.ok(!refused.ok && refused.reason === 'approval_required');
    survivor = await startInbox({ home: s.home, approverKey: s.approverKey });
    const [r] = await listed(await inboxClient(survivor));
    const dir = join(s.home, 'inbox-decisions');
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const here = pidSpace();
    const there = here.replace(/^./, (c) => (c === '0' ? '1' : '0'));
    // A pid no process here has (pid_max is at most 2^22): here it would read as a writer gone.
    const foreign = `${there}-4999999-12345-0123456789abcdef01234567.json`;
    const unnamed = '89abcdef0123456789abcdef.json'; // written before notes named their writer
    const head = Math.max(...ledger(s).map((e) => e.seq as number));
    const note = JSON.stringify({ id: r.id, head, entry: { kind: 'operator', action: 'deny', request_entry: r.entry, fingerprint: 'sha256:0', tool: 'send_email' } });
    for (const n of [foreign, unnamed]) writeFileSync(join(dir, n), note, { mode: 0o600 });
    await until(() => !notes(s).includes(unnamed), 15_000, 'the note without a writer was completed');
    await new Promise((res) => setTimeout(res, 2500)); // two more reads of the store
    assert.deepEqual(notes(s), [foreign], "the other pid space's young note is its writer's");
    const old = new Date(Date.now() - 60_000);
    utimesSync(join(dir, foreign), old, old); // a writer there that never came back
    await until(() => notes(s).length === 0, 15_000, "the other pid space's old note was completed");
    assert.deepEqual((await listed(await inboxClient(survivor))).map((x) => x.id), [r.id], 'nothing of either had committed: the request still waits');
    assert.equal(ledger(s).filter((e) => e.kind === 'operator').length, 0);
  } finally {
    await survivor?.stop();
    await g.close();
  }
});

test('inboxes killed at random instants while another runs and decides: every request is decided whole or still waits, without a restart', { timeout: 240_000 }, async () => {
  const s = setup();
  const g = await startGate(s);
  let survivor: RunningInbox | undefined;
  try {
    const refusals: number[] = [];
    for (let n = 0; n < 24; n++) {
      const o = await call(g, 'send_email', { to: `running-${n}@example.com` });
      assert.ok(!o.ok && o.reason === 'approval_required');
      refusals.push(o.data.entry as number);
    }
    survivor = await startInbox({ home: s.home, approverKey: s.approverKey });
    const api = await inboxClient(survivor);
    for (let round = 0; round < 6; round++) {
      const victim = await startInbox({ home: s.home, approverKey: s.approverKey });
      const vapi = await inboxClient(victim);
      const open = await listed(vapi);
      // The victim and the survivor decide the same requests at once: one of two finds it gone.
      const decisions = open.slice(0, 4).flatMap((r, i) => {
        const action = i % 2 ? 'deny' : 'approve';
        return [vapi(`/api/requests/${r.id}/${action}`, 'POST').catch(() => null), api(`/api/requests/${r.id}/${action}`, 'POST')];
      });
      await new Promise((r) => setTimeout(r, Math.random() * 40));
      process.kill(victim.pid, 'SIGKILL');
      await Promise.all(decisions);
      await victim.exited;
    }
    await until(() => notes(s).length === 0, 15_000, 'the running inbox completed every note');
    const openNow = new Set((await listed(api)).map((r) => r.entry));
    const operator = ledger(s).filter((e) => e.kind === 'operator');
    for (const seq of refusals) {
      const decided = operator.filter((e) => e.request_entry === seq);
      assert.ok(decided.length <= 1, `request of entry ${seq}: ${decided.length} operator entries`);
      assert.equal(openNow.has(seq), decided.length === 0, `request of entry ${seq}: ${decided.length} operator entries, ${openNow.has(seq) ? 'still' : 'no longer'} waiting`);
    }
  } finally {
    await survivor?.stop();
    await g.close();
  }
});
