// A TSA whose signing certificate has an empty subject (legal: RFC 5280 section 4.1.2.6, the name
// is then a critical subjectAltName; OpenSSL verifies such tokens) is verified, and reported by
// its subjectAltName. When the chain fails, the refusal says what failed.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { X509Certificate } from 'node:crypto';
import { requestTimestamp } from '../../src/ledger/anchors/tsa/client.js';
import { verifyTsaToken } from '../../src/ledger/anchors/tsa/verify.js';
import { AnchorError } from '../../src/ledger/anchors/errors.js';
import { TSA_TOKENS, fixtureBytes, fixtureText } from '../helpers/public-log.js';
import { startOpensslTsa, type TestTsa } from '../helpers/openssl-tsa.js';

let tsa: TestTsa;
let other: TestTsa;
before(async () => {
  [tsa, other] = await Promise.all([startOpensslTsa('Empty Subject TSA', { emptySubject: true }), startOpensslTsa('Other TSA')]);
});
after(async () => {
  await Promise.all([tsa.close(), other.close()]);
});

const d = { algorithm: 'sha256' as const, value: createHash('sha256').update('empty-subject epoch').digest() };

test('a token signed by an empty-subject certificate verifies, named by its subjectAltName', async () => {
  const leaf = new X509Certificate(tsa.chainPem.slice(0, tsa.chainPem.indexOf('-----END CERTIFICATE-----') + 25));
  assert.equal(leaf.subject, undefined, 'the test certificate really has an empty subject');
  const r = await requestTimestamp(tsa.url, d, { chainPem: tsa.chainPem });
  const s = await verifyTsaToken(r.token, tsa.chainPem, { digest: d, nonce: r.nonce });
  assert.equal(s.tsa, '(empty subject; DNS:tsa.cloakpipe.test)');
  assert.equal(s.chain[0], s.tsa);
  assert.match(s.chain[1], /Empty Subject TSA Root/);
  // The root alone suffices (the token embeds its signing certificate).
  await verifyTsaToken(r.token, tsa.rootPem, { digest: d });
});

test('a chain failure says what failed', async () => {
  // GitHub's token embeds no certificate: with the intermediate left out of the bundle the path
  // validator fails, and its reason is in the refusal (not a bare "does not chain").
  const g = TSA_TOKENS[1];
  const [leaf, , root] = fixtureText(g.chain).match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----\n?/g)!;
  await assert.rejects(verifyTsaToken(fixtureBytes(g.token), leaf + root), (e: unknown) => {
    assert.ok(e instanceof AnchorError);
    assert.equal(e.code, 'tsa_chain_invalid');
    assert.match(e.message, /^signing certificate does not chain to the given root at genTime: \S/);
    return true;
  });
  // An embedded certificate no known certificate signed is named as such.
  const r = await requestTimestamp(tsa.url, d, { chainPem: tsa.chainPem });
  await assert.rejects(verifyTsaToken(r.token, other.rootPem, { digest: d }), /embedded certificate is not signed by any known certificate/);
});
