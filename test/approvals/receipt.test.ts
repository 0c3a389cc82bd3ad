import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createPublicKey, generateKeyPairSync, sign, verify } from 'node:crypto';
import { parseReceipt, receiptId, signReceipt, signedPart, verifyReceipt, type Receipt } from '../../src/approvals/receipt.js';
import { keyIdOf } from '../../src/ledger/keys.js';
import { canonicalBytes } from '../../src/core/canonical.js';
import { fingerprintOf } from '../../src/core/call.js';

const approver = generateKeyPairSync('ed25519');
const stranger = generateKeyPairSync('ed25519');
const approvers = new Map([[keyIdOf(approver.publicKey), approver.publicKey]]);
const fp = fingerprintOf('send_email', { to: 'a@example.com', body: 'hi' }, 'T-1');
const otherFp = fingerprintOf('send_email', { to: 'b@example.com', body: 'hi' }, 'T-1');
const T0 = Date.parse('2026-11-30T08:00:00.000Z');
const TTL = 15 * 60_000;

function fresh(): Receipt {
  return signReceipt({ privateKey: approver.privateKey, fingerprint: fp, issuedAt: T0, ttlMs: TTL });
}
function check(r: unknown, now = T0 + 1000, fingerprint = fp) {
  return verifyReceipt(r, { fingerprint, approvers, now });
}
/** Re-sign a modified body with a key: a receipt that is authentic but says something else. */
function resign(body: Omit<Receipt, 'signature'>, key = approver.privateKey): Receipt {
  return { ...body, signature: sign(null, canonicalBytes(body), key).toString('base64') };
}

test('a signed receipt has exactly the contract fields and verifies', () => {
  const r = fresh();
  assert.deepEqual(Object.keys(r).sort(), ['approver', 'expires_at', 'fingerprint', 'issued_at', 'nonce', 'signature', 'v']);
  assert.equal(r.v, 1);
  assert.equal(r.approver, keyIdOf(approver.publicKey));
  assert.equal(r.issued_at, '2026-11-30T08:00:00.000Z');
  assert.equal(r.expires_at, '2026-11-30T08:15:00.000Z');
  const v = check(r);
  assert.ok(v.ok);
  assert.equal(v.id, receiptId(r));
  // The signature covers the RFC 8785 form of the other fields.
  assert.ok(createPublicKey(approver.privateKey));
  assert.ok(verify(null, canonicalBytes(signedPart(r)), approver.publicKey, Buffer.from(r.signature, 'base64')));
});


test('two receipts for the same call differ (nonce) and have different ids', () => {
  const a = fresh();
  const b = fresh();
  assert.notEqual(a.nonce, b.nonce);
  assert.notEqual(receiptId(a), receiptId(b));
  // The id does not depend on the signature's spelling.
  assert.equal(receiptId(a), receiptId(signedPart(a)));
});

test('every tamper of a signed field breaks the signature', () => {
  const r = fresh();
  const tampered: [string, Receipt][] = [
    ['fingerprint', { ...r, fingerprint: otherFp }],
    ['issued_at', { ...r, issued_at: '2026-11-30T08:00:01.000Z' }],
    ['expires_at', { ...r, expires_at: '2026-11-30T09:15:00.000Z' }],
    ['nonce', { ...r, nonce: r.nonce.slice(0, -1) + (r.nonce.endsWith('A') ? 'B' : 'A') }],
  ];
  for (const [name, t] of tampered) {
    const v = check(t, T0 + 1000, t.fingerprint);
    assert.equal(v.ok, false, name);
    assert.equal(!v.ok && v.check, 'bad_signature', name);
    assert.match(!v.ok ? v.detail : '', /^bad_signature: /);
  }
  // A flipped signature bit.
  const sig = Buffer.from(r.signature, 'base64');
  sig[10] ^= 1;
  const v = check({ ...r, signature: sig.toString('base64') });
  assert.equal(!v.ok && v.check, 'bad_signature');
});

test('a receipt signed by a key the gate does not know: unknown_approver', () => {
  const r = signReceipt({ privateKey: stranger.privateKey, fingerprint: fp, issuedAt: T0, ttlMs: TTL });
  const v = check(r);
  assert.equal(!v.ok && v.check, 'unknown_approver');
  // Claiming a known approver's id with a stranger's signature: bad_signature.
  const forged = resign({ ...signedPart(r), approver: keyIdOf(approver.publicKey) as never }, stranger.privateKey);
  const w = check(forged);
  assert.equal(!w.ok && w.check, 'bad_signature');
});

test('an authentic receipt for a different call: fingerprint_mismatch', () => {
  const r = signReceipt({ privateKey: approver.privateKey, fingerprint: otherFp, issuedAt: T0, ttlMs: TTL });
  const v = check(r);
  assert.equal(!v.ok && v.check, 'fingerprint_mismatch');
});

test('validity window: expired at expires_at, not yet valid beyond the skew', () => {
  const r = fresh();
  assert.ok(check(r, T0 + TTL - 1).ok);
  const exp = check(r, T0 + TTL);
  assert.equal(!exp.ok && exp.check, 'expired');
  assert.ok(check(r, T0 - 10_000).ok, 'small clock skew tolerated');
  const early = check(r, T0 - 60_000);
  assert.equal(!early.ok && early.check, 'not_yet_valid');
});

test('malformed: unknown keys, missing keys, wrong types, bad formats', () => {
  const r = fresh();
  const cases: [string, unknown][] = [
    ['not an object', 'receipt'],
    ['array', [r]],
    ['null', null],
    ['extra key', { ...r, note: 'x' }],
    ['missing nonce', (({ nonce: _n, ...rest }) => rest)(r)],
    ['v 2', { ...r, v: 2 }],
    ['v string', { ...r, v: '1' }],
    ['fingerprint upper', { ...r, fingerprint: r.fingerprint.toUpperCase() }],
    ['fingerprint short', { ...r, fingerprint: 'sha256:abc' }],
    ['approver number', { ...r, approver: 1 }],
    ['issued_at offset', { ...r, issued_at: '2026-11-30T08:00:00+00:00' }],
    ['issued_at impossible', { ...r, issued_at: '2026-02-30T08:00:00.000Z' }],
    ['expires before issued', { ...r, expires_at: r.issued_at }],
    ['nonce short', { ...r, nonce: 'abc' }],
    ['nonce symbols', { ...r, nonce: 'a'.repeat(15) + '!' }],
    ['signature short', { ...r, signature: 'AAAA' }],
    ['signature number', { ...r, signature: 5 }],
  ];
  for (const [name, c] of cases) {
    const v = check(c);
    assert.equal(!v.ok && v.check, 'malformed', name);
    assert.match(!v.ok ? v.detail : '', /^malformed: /, name);
  }
  // Non-canonical base64 of the same bytes (the last character's unused bits set).
  const s = r.signature;
  const last = s[s.length - 3];
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
  const bumped = alphabet[alphabet.indexOf(last) + 1] ?? alphabet[alphabet.indexOf(last) - 1];
  const alt = s.slice(0, -3) + bumped + '==';
  if (Buffer.from(alt, 'base64').equals(Buffer.from(s, 'base64'))) {
    const v = check({ ...r, signature: alt });
    assert.equal(!v.ok && v.check, 'malformed');
  }
  assert.equal(parseReceipt(r).ok, true);
});

test('a detail never carries more than digests and times', () => {
  const r = signReceipt({ privateKey: approver.privateKey, fingerprint: otherFp, issuedAt: T0, ttlMs: TTL });
  const v = check(r);
  assert.ok(!v.ok);
  assert.doesNotMatch(v.detail, /example\.com/);
});
