// Real RFC 3161 tokens (sigstore, GitHub, freetsa) verify with our code; the checks around them
// (imprint, chain, nonce, genTime, TimeStampResp status) refuse with precise codes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { verifyTsaToken } from '../../src/ledger/anchors/tsa/verify.js';
import { TSA_TOKENS, fixtureBytes, fixtureText } from '../helpers/public-log.js';
import { timeStampResp } from '../helpers/der.js';
import { anchorCode } from '../helpers/anchor-code.js';


const pemBlocks = (pem: string) => pem.match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----\n?/g)!;

test('every public RFC 3161 fixture verifies, with its recorded imprint and genTime', async () => {
  for (const f of TSA_TOKENS) {
    const s = await verifyTsaToken(fixtureBytes(f.token), fixtureText(f.chain), { digest: `sha256:${f.meta.messageImprintHex}` });
    assert.equal(s.imprint, `sha256:${f.meta.messageImprintHex}`);
    assert.equal(s.genTime, new Date(f.meta.genTime).toISOString());
    assert.equal(s.chain.length, pemBlocks(fixtureText(f.chain)).length);
  }
});

test('--digest: another digest is refused with imprint_mismatch (also the same hex under another hash)', async () => {
  for (const f of TSA_TOKENS) {
    const other = f.meta.messageImprintHex.replace(/^./, (c) => (c === '0' ? '1' : '0'));
    assert.equal(await anchorCode(verifyTsaToken(fixtureBytes(f.token), fixtureText(f.chain), { digest: `sha256:${other}` })), 'imprint_mismatch');
  }
  const f = TSA_TOKENS[0];
  const d = { algorithm: 'sha384' as const, value: Buffer.concat([Buffer.from(f.meta.messageImprintHex, 'hex'), Buffer.alloc(16)]) };
  assert.equal(await anchorCode(verifyTsaToken(fixtureBytes(f.token), fixtureText(f.chain), { digest: d })), 'imprint_mismatch');
});

test('a whole TimeStampResp verifies when granted; a refused status fails with tsa_status', async () => {
  for (const f of TSA_TOKENS) {
    const s = await verifyTsaToken(timeStampResp(0, fixtureBytes(f.token)), fixtureText(f.chain));
    assert.equal(s.status, 0);
    assert.equal(await anchorCode(verifyTsaToken(timeStampResp(2, fixtureBytes(f.token)), fixtureText(f.chain))), 'tsa_status');
  }
  assert.equal(await anchorCode(verifyTsaToken(timeStampResp(2), fixtureText(TSA_TOKENS[0].chain))), 'tsa_status');
});

test("a token checked against another TSA's root fails with tsa_chain_invalid", async () => {
  for (const f of TSA_TOKENS) {
    for (const g of TSA_TOKENS) {
      if (f === g) continue;
      assert.equal(await anchorCode(verifyTsaToken(fixtureBytes(f.token), fixtureText(g.chain))), 'tsa_chain_invalid', `${f.token} vs ${g.chain}`);
    }
  }
});

test('a token without certificates needs the signing certificate in the bundle; embedded ones do not', async () => {
  const blocks1 = pemBlocks(fixtureText(TSA_TOKENS[0].chain));
  assert.equal(await anchorCode(verifyTsaToken(fixtureBytes(TSA_TOKENS[0].token), blocks1[blocks1.length - 1])), 'tsa_chain_invalid');
  // freetsa embeds its chain: the root alone suffices.
  const blocks3 = pemBlocks(fixtureText(TSA_TOKENS[2].chain));
  assert.equal(await anchorCode(verifyTsaToken(fixtureBytes(TSA_TOKENS[2].token), blocks3[blocks3.length - 1])), 'valid');
  // GitHub: leaf and root without the intermediate cannot chain.
  const blocks2 = pemBlocks(fixtureText(TSA_TOKENS[1].chain));
  assert.equal(await anchorCode(verifyTsaToken(fixtureBytes(TSA_TOKENS[1].token), blocks2[0] + blocks2[2])), 'tsa_chain_invalid');
});

test('validity is judged at genTime: the freetsa leaf expired in 2026 but was valid when it signed', async () => {
  const f = TSA_TOKENS[2];
  const s = await verifyTsaToken(fixtureBytes(f.token), fixtureText(f.chain));
  assert.ok(new Date(s.genTime) < new Date('2026-03-11T01:57:39Z'));
});

test('genTime lower bound: gentime_before when the token predates it', async () => {
  for (const f of TSA_TOKENS) {
    const gen = new Date(f.meta.genTime).getTime();
    assert.equal(await anchorCode(verifyTsaToken(fixtureBytes(f.token), fixtureText(f.chain), { notBefore: new Date(gen - 1000) })), 'valid');
    assert.equal(await anchorCode(verifyTsaToken(fixtureBytes(f.token), fixtureText(f.chain), { notBefore: new Date(gen) })), 'valid');
    assert.equal(await anchorCode(verifyTsaToken(fixtureBytes(f.token), fixtureText(f.chain), { notBefore: new Date(gen + 1000) })), 'gentime_before');
  }
});

test('nonce: must match when one was sent; a token without a nonce fails with nonce_mismatch', async () => {
  const f = TSA_TOKENS[2];
  const s = await verifyTsaToken(fixtureBytes(f.token), fixtureText(f.chain));
  assert.equal(await anchorCode(verifyTsaToken(fixtureBytes(f.token), fixtureText(f.chain), { nonce: BigInt(s.nonce!) })), 'valid');
  assert.equal(await anchorCode(verifyTsaToken(fixtureBytes(f.token), fixtureText(f.chain), { nonce: BigInt(s.nonce!) + 1n })), 'nonce_mismatch');
  const g = TSA_TOKENS[0];
  assert.equal(await anchorCode(verifyTsaToken(fixtureBytes(g.token), fixtureText(g.chain), { nonce: 1n })), 'nonce_mismatch');
});

test('trailing bytes, truncation and garbage are malformed, never a crash', async () => {
  const f = TSA_TOKENS[0];
  const der = fixtureBytes(f.token);
  for (const bad of [Buffer.concat([der, Buffer.from([0])]), der.subarray(0, der.length - 1), Buffer.alloc(0), Buffer.from('hello')]) {
    assert.equal(await anchorCode(verifyTsaToken(bad, fixtureText(f.chain))), 'malformed');
  }
});
