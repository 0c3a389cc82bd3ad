import { test } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { checkApproval } from '../../src/gate/checks/approval.js';
import { approvalService } from '../../src/approvals/service.js';
import { signReceipt } from '../../src/approvals/receipt.js';
import { keyIdOf } from '../../src/ledger/keys.js';
import { gateLikeStore } from '../operations/helpers.js';
import { applyAllow, factsFor, READ } from '../operations/facts.js';
import type { Digest } from '../../src/core/digest.js';

const key = generateKeyPairSync('ed25519');
const stranger = generateKeyPairSync('ed25519');

function setup() {
  const { store: s, dir } = gateLikeStore();
  const store = s.receipts;
  const inboxDir = join(dir, 'approvals');
  mkdirSync(inboxDir);
  const approvals = approvalService({ receipts: store, requests: s.approvalRequests, approvers: new Map([[keyIdOf(key.publicKey), key.publicKey]]), inboxDir, requestTtlMs: 60_000 });
  return { services: { approvals }, inboxDir, store, requests: s.approvalRequests };
}
const sign = (fingerprint: Digest, o: { issuedAt?: number; ttlMs?: number; k?: typeof key } = {}) =>
  signReceipt({ privateKey: (o.k ?? key).privateKey, fingerprint, issuedAt: o.issuedAt ?? Date.now(), ttlMs: o.ttlMs ?? 60_000 });

test('tools without approval: required pass untouched', () => {
  const { services } = setup();
  assert.ok(checkApproval(factsFor({ tool: READ, name: 'lookup', args: { q: 'x' }, services })).ok);
});

test('no receipt: approval_required with the fingerprint', () => {
  const { services } = setup();
  const f = factsFor({ services });
  const v = checkApproval(f);
  assert.equal(!v.ok && v.code, 'approval_required');
  assert.ok(!v.ok && v.detail.includes(f.fingerprint));
});

/** A call carrying a valid receipt in _meta, which the check allows. */
function approvedCall() {
  const { services, store } = setup();
  const f = factsFor({ services });
  const r = sign(f.fingerprint);
  f.call.meta['cloakpipe/approval'] = r as never;
  assert.ok(checkApproval(f).ok);
  return { services, store, f, r };
}

test('a valid receipt in _meta: allowed, consumed on allow, then already_used', () => {
  const { services, store, f, r } = approvedCall();
  assert.equal(f.notes.fields.approver, keyIdOf(key.publicKey));
  assert.match(String(f.notes.fields.receipt), /^sha256:/);
  assert.equal(f.notes.fields.approval, 'meta');
  applyAllow(f);
  assert.ok(store.used(String(f.notes.fields.receipt)));
  const g = factsFor({ services, meta: { 'cloakpipe/approval': r as never } });
  const v = checkApproval(g);
  assert.equal(!v.ok && v.code, 'approval_invalid');
  assert.match(!v.ok ? v.detail : '', /^already_used: /);
});

test('each invalid receipt is refused with the check that failed', () => {
  const { services } = setup();
  const f0 = factsFor({ services });
  const other = factsFor({ services, args: { to: 'b@example.com', body: 'x' } }).fingerprint;
  const good = sign(f0.fingerprint);
  const cases: [string, unknown][] = [
    ['fingerprint_mismatch', sign(other)],
    ['expired', sign(f0.fingerprint, { issuedAt: Date.now() - 120_000, ttlMs: 60_000 })],
    ['not_yet_valid', sign(f0.fingerprint, { issuedAt: Date.now() + 3_600_000 })],
    ['unknown_approver', sign(f0.fingerprint, { k: stranger })],
    ['bad_signature', { ...good, nonce: 'A'.repeat(22) }],
    ['malformed', 'a receipt as a string'],
    ['malformed', { ...good, extra: 1 }],
  ];
  for (const [check, receipt] of cases) {
    const f = factsFor({ services, meta: { 'cloakpipe/approval': receipt as never } });
    const v = checkApproval(f);
    assert.equal(!v.ok && v.code, 'approval_invalid', check);
    assert.match(!v.ok ? v.detail : '', new RegExp(`^${check}: `), check);
    assert.equal(f.notes.onAllow.length, 0);
    assert.doesNotMatch(!v.ok ? v.detail : '', /example\.com|hello/);
  }
});

test('the inbox: a valid receipt there is used once; then already_used', () => {
  const { services, inboxDir } = setup();
  const f = factsFor({ services });
  writeFileSync(join(inboxDir, 'x.json'), JSON.stringify(sign(f.fingerprint)));
  assert.ok(checkApproval(f).ok);
  assert.equal(f.notes.fields.approval, 'inbox');
  applyAllow(f);
  const g = factsFor({ services });
  const v = checkApproval(g);
  assert.equal(!v.ok && v.code, 'approval_invalid');
  assert.match(!v.ok ? v.detail : '', /^already_used/);
  // A second, fresh receipt for the same call is picked over the used one.
  writeFileSync(join(inboxDir, 'y.json'), JSON.stringify(sign(f.fingerprint)));
  assert.ok(checkApproval(factsFor({ services })).ok);
});

test('a replay needs no receipt', () => {
  const { services } = setup();
  const f = factsFor({ services });
  f.notes.replay = { content: [] };
  assert.ok(checkApproval(f).ok);
  assert.equal(f.notes.onAllow.length, 0);
});

test('no approval service: fail_closed', () => {
  const v = checkApproval(factsFor({ services: {} }));
  assert.equal(!v.ok && v.code, 'fail_closed');
});

test('the used receipt is kept whole, so the approval can be re-verified later', () => {
  const { services, store, f, r } = approvedCall();
  applyAllow(f);
  const used = store.used(String(f.notes.fields.receipt))!;
  assert.deepEqual(JSON.parse(used.receipt), r);
  assert.equal(used.nonce, r.nonce);
});

test('approval_required records the call for the inbox once its entry is known; nothing when a receipt was presented', () => {
  const { services, requests } = setup();
  const now = Date.parse('2026-11-30T09:00:00.000Z');
  const f = factsFor({ services, now, args: { to: 'a@example.com', body: '<script>x</script>' } });
  (f as { manifest: unknown }).manifest = { digest: 'sha256:' + 'e'.repeat(64), manifest: { release: 'r@1' } };
  const v = checkApproval(f);
  assert.equal(!v.ok && v.code, 'approval_required');
  assert.equal(requests.pending(new Date(now).toISOString(), 10).length, 0, 'nothing before the refusal is recorded');
  assert.equal(f.notes.onRefuse.length, 1);
  for (const e of f.notes.onRefuse) e(42);
  const [r] = requests.pending(new Date(now).toISOString(), 10);
  assert.equal(r.fingerprint, f.fingerprint);
  assert.equal(r.entry, 42);
  assert.equal(r.task, 'T-1');
  assert.equal(r.label, 'public');
  assert.equal(r.call, '{"arguments":{"body":"<script>x</script>","to":"a@example.com"},"tool":"send_email"}', 'the call as it would be forwarded (RFC 8785)');
  assert.deepEqual(JSON.parse(r.rule), { declaration: JSON.parse(JSON.stringify(f.tool)), manifest_digest: 'sha256:' + 'e'.repeat(64), release: 'r@1', tool: 'send_email' });
  assert.equal(Date.parse(r.expires_at) - Date.parse(r.created_at), 60_000, 'the request expires after --request-ttl');

  const g = factsFor({ services, meta: { 'cloakpipe/approval': 'not a receipt' } });
  checkApproval(g);
  assert.equal(g.notes.onRefuse.length, 0, 'approval_invalid is not a request');
});

test('a receipt the inbox page signed into the store is taken like one in the approvals directory', () => {
  const { services, requests } = setup();
  const f = factsFor({ services });
  const r = sign(f.fingerprint);
  requests.offer({ receipt_id: 'sha256:' + '9'.repeat(64), fingerprint: f.fingerprint, receipt: JSON.stringify(r), expires_at: r.expires_at });
  assert.ok(checkApproval(f).ok);
  assert.equal(f.notes.fields.approval, 'inbox');
  applyAllow(f);
  const v = checkApproval(factsFor({ services }));
  assert.equal(!v.ok && v.code, 'approval_invalid', 'the offered receipt stays until it expires: a second use is already_used');
  assert.match(!v.ok ? v.detail : '', /^already_used/);
});
