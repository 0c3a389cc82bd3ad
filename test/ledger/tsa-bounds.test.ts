// Unsigned input cannot make the TSA check slow or lenient: a genuine token whose certificate bag
// is stuffed with thousands of parseable certificates is refused (bounded bag) without pairwise
// work; repeats of the genuine certificates are de-duplicated and the token still verifies; the
// unsigned SignedData fields have the forms token.ts states, and no other.
// Time is never asserted here: bench/anchor-bounds.ts prints the CPU time of the large cases.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { verifyTsaToken } from '../../src/ledger/anchors/tsa/verify.js';
import { MAX_EMBEDDED_CERTS } from '../../src/ledger/anchors/tsa/token.js';
import { encodeTlv, parseDer } from '../../src/ledger/anchors/der.js';
import { TSA_TOKENS, fixtureBytes, fixtureText } from '../helpers/public-log.js';
import { parseableCopies, withCertificateBag } from '../helpers/stuffed-token.js';
import { seq, int } from '../helpers/der.js';
import { anchorCode } from '../helpers/anchor-code.js';

// freetsa's token embeds its two certificates.
const F = TSA_TOKENS[2];
const token = fixtureBytes(F.token);
const chain = fixtureText(F.chain);
const digest = `sha256:${F.meta.messageImprintHex}`;
const embedded = parseDer(token).children[1].children[0].children.find((c) => c.tag === 0xa0)!.children.map((c) => c.bytes);

test('a bag of 5,000 or 20,000 parseable certificates is refused (or verified), never worked through pairwise', async () => {
  assert.equal(embedded.length, 2);
  for (const n of [5_000, 20_000]) {
    const stuffed = withCertificateBag(token, [...embedded, ...parseableCopies(embedded[0], n)]);
    const code = await anchorCode(verifyTsaToken(stuffed, chain, { digest }));
    assert.ok(code === 'malformed' || code === 'valid', `${n} certificates: ${code}`);
    assert.equal(code, 'malformed');
  }
});

test('the genuine certificates repeated up to the bag limit are de-duplicated: the token verifies', async () => {
  const bag = Array.from({ length: MAX_EMBEDDED_CERTS }, (_, i) => embedded[i % 2]);
  const s = await verifyTsaToken(withCertificateBag(token, bag), chain, { digest });
  assert.equal(s.certificatesEmbedded, MAX_EMBEDDED_CERTS);
  assert.equal(s.chain.length, 2);
});

test('one certificate over the limit is refused; junk within the limit fails to chain', async () => {
  const over = withCertificateBag(token, [...embedded, ...parseableCopies(embedded[0], MAX_EMBEDDED_CERTS - 1)]);
  assert.equal(await anchorCode(verifyTsaToken(over, chain, { digest })), 'malformed');
  const junk = withCertificateBag(token, [...embedded, ...parseableCopies(embedded[0], MAX_EMBEDDED_CERTS - 2)]);
  assert.equal(await anchorCode(verifyTsaToken(junk, chain, { digest })), 'tsa_chain_invalid');
});

// Rebuilds the token with SignedData's fields changed by `edit` (signed parts untouched).
function editSignedData(der: Buffer, edit: (fields: Buffer[]) => Buffer[]): Buffer {
  const ci = parseDer(der);
  const fields = ci.children[1].children[0].children.map((c) => Buffer.from(c.bytes));
  return encodeTlv(0x30, ci.children[0].bytes, encodeTlv(0xa0, encodeTlv(0x30, ...edit(fields))));
}

test('unsigned variations outside the stated ones are refused', async () => {
  const sha512 = parseDer(token).children[1].children[0].children[1].children[0].bytes;
  const sha256Alg = seq(encodeTlv(0x06, Buffer.from('608648016503040201', 'hex')));
  // digestAlgorithms listing a second algorithm besides the signer's.
  const twoAlgs = editSignedData(token, (f) => [f[0], encodeTlv(0x31, sha256Alg, sha512), ...f.slice(2)]);
  assert.equal(await anchorCode(verifyTsaToken(twoAlgs, chain, { digest })), 'malformed');
  // unsignedAttrs [1] on the SignerInfo.
  const withUnsigned = editSignedData(token, (f) => {
    const si = parseDer(f[f.length - 1]).children[0];
    const attr = seq(encodeTlv(0x06, Buffer.from('2a864886f70d010903', 'hex')), encodeTlv(0x31, encodeTlv(0x05)));
    const newSi = encodeTlv(0x30, ...si.children.map((c) => c.bytes), encodeTlv(0xa1, attr));
    return [...f.slice(0, -1), encodeTlv(0x31, newSi)];
  });
  assert.equal(await anchorCode(verifyTsaToken(withUnsigned, chain, { digest })), 'malformed');
  // TimeStampResp: a statusString is tolerated, a failInfo beside a granted status is not.
  const statusString = seq(seq(int(0), seq(encodeTlv(0x0c, Buffer.from('ok')))), token);
  assert.equal(await anchorCode(verifyTsaToken(statusString, chain, { digest })), 'valid');
  const failInfo = seq(seq(int(0), encodeTlv(0x03, Buffer.from([0x07, 0x80]))), token);
  assert.equal(await anchorCode(verifyTsaToken(failInfo, chain, { digest })), 'malformed');
});
