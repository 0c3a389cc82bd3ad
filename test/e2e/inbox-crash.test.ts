// An approval and its ledger entry stay one after a crash. On the embedded store the operator
// entry (ledger.db) and the request taken with its receipt offered (operations.db) commit one file
// after the other: an inbox killed between the two left the ledger saying "approved" while the
// request still waited and no receipt existed (the host's retry was refused approval_required,
// and a second approval signed a second receipt). Now the inbox writes what it is about to commit
// aside first and completes it when it starts again. Through the real binaries: the gate, and the
// inbox killed by SIGKILL at the exact instant (a preloaded hook) and at random instants.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { crashBetweenCommits } from '../helpers/crash-between-commits.js';
import { inboxClient, startInbox, type RunningInbox } from '../helpers/inbox-server.js';
import { call, ledger, records, setup, startGate, type Setup } from '../helpers/recording-gate.js';

interface Listed {
  requests: { id: string; entry: number; arguments: { to: string } }[];
}

const listed = async (api: Awaited<ReturnType<typeof inboxClient>>) => (JSON.parse((await api('/api/requests')).body) as Listed).requests;

/** Every request the gate recorded is either decided (one operator entry, closed) or waits (none). */
async function assertWhole(s: Setup, inbox: RunningInbox, refusals: number[]): Promise<{ approved: number[]; waiting: number[] }> {
  const api = await inboxClient(inbox);
  const open = new Set((await listed(api)).map((r) => r.entry));
  const operator = ledger(s).filter((e) => e.kind === 'operator');
  const approved: number[] = [];
  const waiting: number[] = [];
  for (const seq of refusals) {
    const decided = operator.filter((e) => e.request_entry === seq);
    assert.ok(decided.length <= 1, `request of entry ${seq}: ${decided.length} operator entries`);
    if (decided.length === 1) {
      assert.ok(!open.has(seq), `request of entry ${seq}: the ledger says ${decided[0].action}, and the page still shows it waiting`);
      approved.push(seq);
    } else {
      assert.ok(open.has(seq), `request of entry ${seq}: no entry, and it no longer waits`);
      waiting.push(seq);
    }
  }
  return { approved, waiting };
}

test('an inbox killed between the ledger commit and the operations commit: after a restart the approval is whole, and the retry runs once', { timeout: 120_000 }, async () => {
  const s = setup();
  const g = await startGate(s);
  let inbox: RunningInbox | undefined;
  try {
    const args = { to: 'cut-between@example.com' };
    const refused = await call(g, 'send_email', args);
    assert.ok(!refused.ok && refused.reason === 'approval_required');
    const crashing = await startInbox({ home: s.home, approverKey: s.approverKey, env: crashBetweenCommits() });
    const api = await inboxClient(crashing);
    const [r] = await listed(api);
    const cut = await api(`/api/requests/${r.id}/approve`, 'POST').then(
      (a) => `answered ${a.status}`,
      () => 'cut',
    );
    assert.equal(cut, 'cut', 'the hook killed the inbox inside the approval');
    inbox = await startInbox({ home: s.home, approverKey: s.approverKey });
    const { approved } = await assertWhole(s, inbox, [r.entry]);
    // The ledger's commit came first (the hook kills after it): the approval stands, whole.
    assert.deepEqual(approved, [r.entry]);
    const retries = [await call(g, 'send_email', args), await call(g, 'send_email', args)];
    assert.ok(retries[0].ok, JSON.stringify(retries[0]));
    assert.ok(!retries[1].ok && retries[1].reason === 'approval_invalid', JSON.stringify(retries[1]));
    assert.equal(records(s).filter((c) => c.arguments.to === args.to).length, 1, 'the call ran once');
  } finally {
    await inbox?.stop();
    await g.close();
  }
});

test('inboxes killed at random instants while approving and denying: every request is decided whole or still waits', { timeout: 240_000 }, async () => {
  const s = setup();
  const g = await startGate(s);
  let inbox: RunningInbox | undefined;
  try {
    const refusals: number[] = [];
    for (let n = 0; n < 24; n++) {
      const o = await call(g, 'send_email', { to: `random-${n}@example.com` });
      assert.ok(!o.ok && o.reason === 'approval_required');
      refusals.push(o.data.entry as number);
    }
    for (let round = 0; round < 6; round++) {
      const victim = await startInbox({ home: s.home, approverKey: s.approverKey });
      const api = await inboxClient(victim);
      const open = await listed(api);
      const decisions = open.slice(0, 4).map((r, i) => api(`/api/requests/${r.id}/${i % 2 ? 'deny' : 'approve'}`, 'POST').catch(() => null));
      await new Promise((r) => setTimeout(r, Math.random() * 40));
      process.kill(victim.pid, 'SIGKILL');
      await Promise.all(decisions);
      await victim.exited;
    }
    inbox = await startInbox({ home: s.home, approverKey: s.approverKey });
    await assertWhole(s, inbox, refusals);
  } finally {
    await inbox?.stop();
    await g.close();
  }
});

test('a note cut while it was written (killed before its decision began): the inbox starts, drops it, and the request still waits', { timeout: 120_000 }, async () => {
  const s = setup();
  const g = await startGate(s);
  let inbox: RunningInbox | undefined;
  try {
    const refused = await call(g, 'send_email', { to: 'torn-note@example.com' });
    assert.ok(!refused.ok && refused.reason === 'approval_required');
    const notes = join(s.home, 'inbox-decisions');
    mkdirSync(notes, { recursive: true, mode: 0o700 });
    writeFileSync(join(notes, 'a1b2c3d4e5f6a1b2c3d4e5f6.json'), '{"id":"');
    inbox = await startInbox({ home: s.home, approverKey: s.approverKey });
    const { waiting } = await assertWhole(s, inbox, [refused.data.entry as number]);
    assert.deepEqual(waiting, [refused.data.entry]);
    assert.deepEqual(readdirSync(notes), []);
  } finally {
    await inbox?.stop();
    await g.close();
  }
});
