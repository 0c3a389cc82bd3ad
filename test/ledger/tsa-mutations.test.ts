// Every one-byte change to every real RFC 3161 fixture token fails: one bit flipped per byte
// position (bit = position mod 8), over every byte of the DER, including embedded certificates.
// (All 8 bits of every byte were swept once during development, with no survivor; this keeps the
// suite fast.)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { verifyTsaToken } from '../../src/ledger/anchors/tsa/verify.js';
import { AnchorError } from '../../src/ledger/anchors/errors.js';
import { TSA_TOKENS, fixtureBytes, fixtureText } from '../helpers/public-log.js';

for (const f of TSA_TOKENS) {
  test(`every one-byte change to ${f.token} fails`, async () => {
    const der = fixtureBytes(f.token);
    const chain = fixtureText(f.chain);
    const digest = `sha256:${f.meta.messageImprintHex}`;
    await verifyTsaToken(der, chain, { digest }); // the original verifies
    const survivors: number[] = [];
    const codes = new Map<string, number>();
    for (let p = 0; p < der.length; p++) {
      const m = Buffer.from(der);
      m[p] ^= 1 << (p % 8);
      try {
        await verifyTsaToken(m, chain, { digest });
        survivors.push(p);
      } catch (e) {
        if (!(e instanceof AnchorError)) throw e;
        codes.set(e.code, (codes.get(e.code) ?? 0) + 1);
      }
    }
    assert.deepEqual(survivors, [], 'byte positions whose change still verifies');
    assert.equal([...codes.values()].reduce((a, b) => a + b, 0), der.length);
  });
}
