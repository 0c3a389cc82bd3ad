// Properties: no input makes receipt verification throw or pass by accident, and any change
// to any field of a valid receipt makes it invalid.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { generateKeyPairSync } from 'node:crypto';
import { RECEIPT_FIELDS, signReceipt, verifyReceipt, type Receipt } from '../../src/approvals/receipt.js';
import { keyIdOf } from '../../src/ledger/keys.js';
import { fingerprintOf } from '../../src/core/call.js';

const key = generateKeyPairSync('ed25519');
const approvers = new Map([[keyIdOf(key.publicKey), key.publicKey]]);
const fp = fingerprintOf('t', { a: 1 }, 'T');
const now = Date.parse('2026-11-30T08:00:00.000Z');
const good: Receipt = signReceipt({ privateKey: key.privateKey, fingerprint: fp, issuedAt: now, ttlMs: 600_000 });

test('arbitrary JSON is never a valid receipt and never throws', () => {
  fc.assert(
    fc.property(fc.jsonValue(), (v) => {
      const r = verifyReceipt(v, { fingerprint: fp, approvers, now });
      assert.equal(r.ok, false);
    }),
    { numRuns: 500 },
  );
});

test('receipt-shaped objects with arbitrary field values are never valid', () => {
  const field = fc.oneof(fc.string(), fc.integer(), fc.constant(null), fc.boolean(), fc.jsonValue());
  fc.assert(
    fc.property(fc.constantFrom(...RECEIPT_FIELDS), field, (k, v) => {
      fc.pre(JSON.stringify(v) !== JSON.stringify((good as unknown as Record<string, unknown>)[k]));
      const r = verifyReceipt({ ...good, [k]: v }, { fingerprint: fp, approvers, now: now + 1 });
      assert.equal(r.ok, false);
    }),
    { numRuns: 1000 },
  );
});

test('changing one character of any string field invalidates the receipt', () => {
  const strings = RECEIPT_FIELDS.filter((k) => k !== 'v');
  fc.assert(
    fc.property(fc.constantFrom(...strings), fc.nat(), fc.integer({ min: 32, max: 126 }), (k, at, code) => {
      const s = (good as unknown as Record<string, string>)[k];
      const i = at % s.length;
      const c = String.fromCharCode(code);
      fc.pre(s[i] !== c);
      const changed = s.slice(0, i) + c + s.slice(i + 1);
      const r = verifyReceipt({ ...good, [k]: changed }, { fingerprint: fp, approvers, now: now + 1 });
      assert.equal(r.ok, false, `${k}[${i}] = ${c}`);
    }),
    { numRuns: 2000 },
  );
  assert.ok(verifyReceipt(good, { fingerprint: fp, approvers, now: now + 1 }).ok);
});
