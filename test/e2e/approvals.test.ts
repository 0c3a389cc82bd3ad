// Approvals through the real gate binary: a call that needs a person is refused with its
// fingerprint; `cloakpipe approve` signs a receipt for exactly that call; the gate accepts it
// once; every other receipt (reused, for another call, expired, from an unknown key, forged)
// is refused with the check that failed, and the tool never runs for them.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { cloakpipe } from '../helpers/cli.js';
import { call, callFile, keygen, ledger, records, setup, startGate, waitFor, type RunningGate, type Setup } from '../helpers/recording-gate.js';

const CANARY = 'canary-approvals-5d1e@example.com';
let s: Setup;
let g: RunningGate;

before(async () => {
  s = setup();
  g = await startGate(s);
});
after(async () => {
  await g?.close();
});

function approve(args: string[]): string {
  const r = cloakpipe(['approve', '--key', s.approverKey, ...args]);
  assert.equal(r.status, 0, r.stderr);
  return r.stdout;
}

function receiptFor(tool: string, args: Record<string, unknown>, extra: string[] = []): Record<string, unknown> {
  return JSON.parse(approve(['--call', callFile(s, tool, args), '--context', s.context, '--yes', ...extra]));
}

test('approval required → approve the call → allowed once → the same receipt again is refused', async () => {
  const args = { to: CANARY, body: 'the refund is on its way' };
  const first = await call(g, 'send_email', args);
  assert.equal(first.ok, false);
  assert.ok(!first.ok);
  assert.equal(first.reason, 'approval_required');
  assert.equal(first.code, -32001);
  const fp = first.data.fingerprint as string;
  assert.match(fp, /^sha256:[0-9a-f]{64}$/);
  assert.ok(first.detail.includes(fp), 'the detail names the fingerprint to approve');

  // The CLI computes the same fingerprint from the call file and the task context.
  const file = callFile(s, 'send_email', args);
  const f = cloakpipe(['fingerprint', '--call', file, '--context', s.context]);
  assert.equal(f.status, 0, f.stderr);
  assert.equal(f.stdout.trim(), fp);

  // Without a terminal, approving a call file needs --yes; nothing is signed.
  const noTty = cloakpipe(['approve', '--key', s.approverKey, '--call', file, '--context', s.context]);
  assert.equal(noTty.status, 2);
  assert.match(noTty.stderr, /--yes/);

  const out = join(s.dir, 'receipt-1.json');
  const a = cloakpipe(['approve', '--key', s.approverKey, '--call', file, '--context', s.context, '--yes', '--out', out]);
  assert.equal(a.status, 0, a.stderr);
  assert.match(a.stderr, /send_email/, 'the person is shown the tool');
  const receipt = JSON.parse(readFileSync(out, 'utf8'));
  assert.equal(receipt.fingerprint, fp);

  const ok = await call(g, 'send_email', args, { 'cloakpipe/approval': receipt, 'cloakpipe/operation_id': 'email-1' });
  assert.ok(ok.ok, JSON.stringify(ok));
  assert.equal(records(s).filter((r) => r.tool === 'send_email').length, 1);

  // The same call and receipt as another operation: the receipt is spent.
  const again = await call(g, 'send_email', args, { 'cloakpipe/approval': receipt, 'cloakpipe/operation_id': 'email-2' });
  assert.ok(!again.ok);
  assert.equal(again.reason, 'approval_invalid');
  assert.match(again.detail, /^already_used: /);

  // The same operation again is a replay of the stored result: nothing runs, no receipt needed.
  const replay = await call(g, 'send_email', args, { 'cloakpipe/operation_id': 'email-1' });
  assert.ok(replay.ok);
  assert.equal(replay.ok && replay.text, ok.ok && ok.text);
  assert.equal(records(s).filter((r) => r.tool === 'send_email').length, 1);

  // The ledger names the receipt and the approver by digest and key id, never the values.
  const entries = ledger(s);
  const allowed = entries.find((e) => e.kind === 'decision' && e.outcome === 'allow' && e.tool === 'send_email');
  assert.ok(allowed);
  assert.match(String(allowed.receipt), /^sha256:/);
  assert.equal(allowed.approver, receipt.approver);
  assert.ok(entries.some((e) => e.outcome === 'replay'));
  assert.ok(!JSON.stringify(entries).includes(CANARY), 'no argument value in the ledger');
  assert.ok(!g.stderr().includes(CANARY), 'nor in the diagnostics');
  assert.ok(!g.stderr().includes(receipt.nonce) && !g.stderr().includes(receipt.signature), 'nor the receipt');
});

test('a receipt for a different call, an expired one, one from an unknown key, a forged one: each refused with its reason', async () => {
  const before = records(s).length;
  const mk = (i: number) => ({ to: `person${i}@example.com`, body: `message ${i}` });

  // For a different call: approved for mk(100), presented with mk(1).
  const other = receiptFor('send_email', mk(100));
  const r1 = await call(g, 'send_email', mk(1), { 'cloakpipe/approval': other });
  assert.ok(!r1.ok);
  assert.equal(r1.reason, 'approval_invalid');
  assert.match(r1.detail, /^fingerprint_mismatch: /);

  // Expired.
  const expired = receiptFor('send_email', mk(2), ['--ttl', '1s']);
  await new Promise((r) => setTimeout(r, 1200));
  const r2 = await call(g, 'send_email', mk(2), { 'cloakpipe/approval': expired });
  assert.ok(!r2.ok);
  assert.equal(r2.reason, 'approval_invalid');
  assert.match(r2.detail, /^expired: /);

  // From a key the gate was not given.
  keygen(join(s.dir, 'stranger'));
  const sr = cloakpipe(['approve', '--key', join(s.dir, 'stranger.key'), '--call', callFile(s, 'send_email', mk(3)), '--context', s.context, '--yes']);
  assert.equal(sr.status, 0, sr.stderr);
  const r3 = await call(g, 'send_email', mk(3), { 'cloakpipe/approval': JSON.parse(sr.stdout) });
  assert.ok(!r3.ok);
  assert.equal(r3.reason, 'approval_invalid');
  assert.match(r3.detail, /^unknown_approver: /);

  // Forged: a real receipt with its validity stretched.
  const real = receiptFor('send_email', mk(4));
  const forged = { ...real, expires_at: '2099-01-01T00:00:00.000Z' };
  const r4 = await call(g, 'send_email', mk(4), { 'cloakpipe/approval': forged });
  assert.ok(!r4.ok);
  assert.equal(r4.reason, 'approval_invalid');
  assert.match(r4.detail, /^bad_signature: /);

  // Not a receipt at all.
  const r5 = await call(g, 'send_email', mk(5), { 'cloakpipe/approval': 'yes please' });
  assert.ok(!r5.ok);
  assert.match(r5.detail, /^malformed: /);

  assert.equal(records(s).length, before, 'the tool never ran');
  // ...and the untouched real receipt still works for its own call.
  const ok = await call(g, 'send_email', mk(4), { 'cloakpipe/approval': real });
  assert.ok(ok.ok, JSON.stringify(ok));
});

test('approve --home drops the receipt into the inbox; the gate finds it and uses it once', async () => {
  const args = { to: 'inbox@example.com', body: 'from the inbox' };
  const file = callFile(s, 'send_email', args);
  const fp = cloakpipe(['fingerprint', '--call', file, '--context', s.context]).stdout.trim();
  const r = cloakpipe(['approve', '--key', s.approverKey, '--fingerprint', fp, '--home', s.home, '--json']);
  assert.equal(r.status, 0, r.stderr);
  const out = JSON.parse(r.stdout);
  assert.ok(String(out.path).startsWith(join(s.home, 'approvals')));
  const ok = await call(g, 'send_email', args, { 'cloakpipe/operation_id': 'inbox-1' });
  assert.ok(ok.ok, JSON.stringify(ok));
  const again = await call(g, 'send_email', args, { 'cloakpipe/operation_id': 'inbox-2' });
  assert.ok(!again.ok);
  assert.equal(again.reason, 'approval_invalid');
  assert.match(again.detail, /^already_used/);
});

test('a receipt is single use across gates on one home', async () => {
  const args = { to: 'two-gates@example.com' };
  const receipt = receiptFor('send_email', args);
  const g2 = await startGate(s);
  try {
    const results = await Promise.all([
      call(g, 'send_email', args, { 'cloakpipe/approval': receipt, 'cloakpipe/operation_id': 'tg-1' }),
      call(g2, 'send_email', args, { 'cloakpipe/approval': receipt, 'cloakpipe/operation_id': 'tg-2' }),
    ]);
    assert.equal(results.filter((r) => r.ok).length, 1, JSON.stringify(results));
    const refused = results.find((r) => !r.ok);
    assert.ok(refused && !refused.ok && refused.detail.startsWith('already_used'));
  } finally {
    await g2.close();
  }
});

test('the receipt is spent before forwarding: a gate SIGKILLed mid-call cannot let it authorize a second call', async () => {
  const s2 = setup();
  const args = { to: 'crash@example.com', body: 'once only' };
  const r = cloakpipe(['approve', '--key', s2.approverKey, '--call', callFile(s2, 'send_email', args), '--context', s2.context, '--yes']);
  assert.equal(r.status, 0, r.stderr);
  const receipt = JSON.parse(r.stdout);
  const hung = await startGate(s2, { mode: 'hang' });
  const inflight = call(hung, 'send_email', args, { 'cloakpipe/approval': receipt, 'cloakpipe/operation_id': 'c-1' }, 30_000).catch((e) => e);
  await waitFor(() => records(s2).length === 1);
  process.kill(hung.pid, 'SIGKILL');
  await inflight;
  await hung.close();
  const g2 = await startGate(s2);
  try {
    const same = await call(g2, 'send_email', args, { 'cloakpipe/approval': receipt, 'cloakpipe/operation_id': 'c-1' });
    assert.ok(!same.ok);
    assert.equal(same.reason, 'reconcile_before_retry');
    const other = await call(g2, 'send_email', args, { 'cloakpipe/approval': receipt, 'cloakpipe/operation_id': 'c-2' });
    assert.ok(!other.ok);
    assert.equal(other.reason, 'approval_invalid');
    assert.match(other.detail, /^already_used/);
    assert.equal(records(s2).length, 1);
  } finally {
    await g2.close();
  }
});
