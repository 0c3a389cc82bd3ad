// The RFC 3161 client against a real TSA (`openssl ts -reply` behind a local HTTP server): the
// round trip verifies with the code that verifies the public fixtures; wrong answers, an untrusted
// TSA, a signing certificate under the trusted root without the timeStamping EKU, and unreachable
// TSAs fail with precise codes.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash, X509Certificate } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { requestTimestamp, buildTimeStampReq } from '../../src/ledger/anchors/tsa/client.js';
import { verifyTsaToken } from '../../src/ledger/anchors/tsa/verify.js';
import { AnchorError } from '../../src/ledger/anchors/errors.js';
import { startOpensslTsa, type TestTsa } from '../helpers/openssl-tsa.js';
import { CLI } from '../helpers/public-log.js';
import { anchorCode } from '../helpers/anchor-code.js';

// Signing certificates the trusted TSA's root also issued, for the TSA's own key and name, that
// RFC 3161 section 2.3 rules out: the EKU must be present once, critical, and timeStamping alone.
// Each with the refusal's detail, so each of eku.ts's checks is shown reached.
const BAD_EKU = [
  ['no-eku', null, /^signing certificate has no \(single\) extended key usage extension$/],
  ['server-auth', 'critical,serverAuth', /^extended key usage is not exactly timeStamping$/],
  ['not-critical', 'timeStamping', /^extended key usage is not critical$/],
  ['also-server-auth', 'critical,timeStamping,serverAuth', /^extended key usage is not exactly timeStamping$/],
] as const;

let tsa: TestTsa;
let untrusted: TestTsa;
before(async () => {
  const signers = { 'proper-eku': 'critical,timeStamping', ...Object.fromEntries(BAD_EKU.map(([n, eku]) => [n, eku])) };
  [tsa, untrusted] = await Promise.all([startOpensslTsa('Trusted TSA', { signers }), startOpensslTsa('Untrusted TSA')]);
});
after(async () => {
  await Promise.all([tsa.close(), untrusted.close()]);
});


const root = (s: string) => ({ algorithm: 'sha256' as const, value: createHash('sha256').update(s).digest() });

test('round trip: the token verifies offline (imprint, nonce, chain, EKU, ESS, genTime bound)', async () => {
  tsa.mode = 'ok';
  const before = new Date(Date.now() - 2000);
  const d = root('epoch-1');
  const r = await requestTimestamp(tsa.url, d, { chainPem: tsa.chainPem });
  assert.equal(r.summary!.imprint, `sha256:${d.value.toString('hex')}`);
  const s = await verifyTsaToken(r.token, tsa.chainPem, { digest: d, nonce: r.nonce, notBefore: before });
  assert.equal(s.nonce, r.nonce.toString());
  assert.match(s.tsa, /Trusted TSA/);
  // The root alone suffices: openssl embeds the signing certificate.
  assert.equal(await anchorCode(verifyTsaToken(r.token, tsa.rootPem, { digest: d })), 'valid');
  // And the binary agrees.
  const dir = mkdtempSync(join(tmpdir(), 'cp-tsa-'));
  writeFileSync(join(dir, 't.der'), r.token);
  writeFileSync(join(dir, 'root.pem'), tsa.chainPem);
  const cli = spawnSync(process.execPath, [CLI, 'anchor', 'verify', '--tsa-token', join(dir, 't.der'), '--tsa-root', join(dir, 'root.pem'), '--digest', `sha256:${d.value.toString('hex')}`], { encoding: 'utf8' });
  assert.equal(cli.status, 0, cli.stdout + cli.stderr);
});

test('a token for another digest fails with imprint_mismatch', async () => {
  tsa.mode = 'ok';
  const r = await requestTimestamp(tsa.url, root('a'));
  assert.equal(await anchorCode(verifyTsaToken(r.token, tsa.chainPem, { digest: root('b') })), 'imprint_mismatch');
  tsa.mode = 'wrong-digest';
  assert.equal(await anchorCode(requestTimestamp(tsa.url, root('c'))), 'imprint_mismatch');
  tsa.mode = 'ok';
});

test('a token from an untrusted TSA fails with tsa_chain_invalid', async () => {
  untrusted.mode = 'ok';
  const d = root('u');
  const r = await requestTimestamp(untrusted.url, d);
  assert.equal(await anchorCode(verifyTsaToken(r.token, tsa.chainPem, { digest: d })), 'tsa_chain_invalid');
  assert.equal(await anchorCode(verifyTsaToken(r.token, tsa.rootPem, { digest: d })), 'tsa_chain_invalid');
  assert.equal(await anchorCode(requestTimestamp(untrusted.url, d, { chainPem: tsa.chainPem })), 'tsa_chain_invalid');
});

test('a token signed under the trusted root by a certificate without a lone critical timeStamping EKU fails tsa_eku_missing (library, client, binary)', async () => {
  tsa.mode = 'ok';
  const dir = mkdtempSync(join(tmpdir(), 'cp-tsa-eku-'));
  writeFileSync(join(dir, 'root.pem'), tsa.rootPem);
  writeFileSync(join(dir, 'chain.pem'), tsa.chainPem);
  const binary = (token: Buffer, d: { value: Buffer }, rootFile: string) => {
    writeFileSync(join(dir, 't.der'), token);
    const r = spawnSync(process.execPath, [CLI, 'anchor', 'verify', '--tsa-token', join(dir, 't.der'), '--tsa-root', join(dir, rootFile), '--digest', `sha256:${d.value.toString('hex')}`, '--json'], { encoding: 'utf8' });
    return { status: r.status, out: JSON.parse(r.stdout), err: r.stderr };
  };
  const stamp = async (signer: string, d: ReturnType<typeof root>) => {
    tsa.signer = signer;
    try {
      const r = await requestTimestamp(tsa.url, d);
      // The token carries that certificate, not the TSA's own (verify finds the signer by ESS).
      assert.ok(r.token.includes(new X509Certificate(tsa.signerPem[signer]).raw), signer);
      assert.ok(!r.token.includes(new X509Certificate(tsa.chainPem).raw), signer);
      return r;
    } finally {
      tsa.signer = undefined;
    }
  };
  // Positive control: the same construction (the TSA's TSTInfo, re-signed by openssl cms under
  // the same root, for the same key and name) with a proper EKU verifies, through both.
  const d = root('eku proper');
  const ok = await stamp('proper-eku', d);
  for (const bundle of [tsa.rootPem, tsa.chainPem]) {
    assert.match((await verifyTsaToken(ok.token, bundle, { digest: d, nonce: ok.nonce })).tsa, /Trusted TSA/);
  }
  assert.ok((await requestTimestamp(tsa.url, d, { chainPem: tsa.rootPem })).summary);
  for (const rootFile of ['root.pem', 'chain.pem']) {
    const good = binary(ok.token, d, rootFile);
    assert.equal(good.status, 0, good.err);
    assert.equal(good.out.valid, true);
  }
  for (const [signer, eku, detail] of BAD_EKU) {
    assert.equal(new X509Certificate(tsa.signerPem[signer]).keyUsage?.length, eku === null ? undefined : eku.split(',').filter((p) => p !== 'critical').length, signer);
    const dd = root(`eku ${signer}`);
    const r = await stamp(signer, dd);
    const refused = (e: unknown) => {
      assert.ok(e instanceof AnchorError, signer);
      assert.equal(e.code, 'tsa_eku_missing', `${signer}: ${e.message}`);
      assert.match(e.message, detail, signer);
      return true;
    };
    for (const bundle of [tsa.rootPem, tsa.chainPem]) await assert.rejects(verifyTsaToken(r.token, bundle, { digest: dd, nonce: r.nonce }), refused);
    // The anchoring side refuses to store it, too.
    tsa.signer = signer;
    try {
      await assert.rejects(requestTimestamp(tsa.url, dd, { chainPem: tsa.rootPem }), refused);
    } finally {
      tsa.signer = undefined;
    }
    const bad = binary(r.token, dd, 'root.pem');
    assert.equal(bad.status, 1, `${signer}: ${bad.err}`);
    assert.deepEqual({ valid: bad.out.valid, reason: bad.out.reason }, { valid: false, reason: 'tsa_eku_missing' }, `${signer}: ${bad.out.detail}`);
    assert.match(bad.out.detail, detail, signer);
  }
});

test('an answer with another nonce fails with nonce_mismatch; a rejection with tsa_status', async () => {
  tsa.mode = 'wrong-nonce';
  assert.equal(await anchorCode(requestTimestamp(tsa.url, root('n'))), 'nonce_mismatch');
  tsa.mode = 'ok';
  const r = await requestTimestamp(tsa.url, root('n2'));
  assert.equal(await anchorCode(verifyTsaToken(r.token, tsa.chainPem, { nonce: r.nonce + 1n })), 'nonce_mismatch');
  tsa.mode = 'reject';
  assert.equal(await anchorCode(requestTimestamp(tsa.url, root('r'))), 'tsa_status');
  tsa.mode = 'garbage';
  assert.equal(await anchorCode(requestTimestamp(tsa.url, root('g'))), 'malformed');
  tsa.mode = 'ok';
});

test('genTime before a lower bound fails with gentime_before', async () => {
  tsa.mode = 'ok';
  const r = await requestTimestamp(tsa.url, root('t'));
  assert.equal(await anchorCode(verifyTsaToken(r.token, tsa.chainPem, { notBefore: new Date(Date.now() + 60_000) })), 'gentime_before');
});

test('an HTTP error, a TSA that never answers, and a closed port are unavailable', async () => {
  tsa.mode = 'http-500';
  assert.equal(await anchorCode(requestTimestamp(tsa.url, root('h'))), 'unavailable');
  tsa.mode = 'hang';
  assert.equal(await anchorCode(requestTimestamp(tsa.url, root('h'), { timeoutMs: 300 })), 'unavailable');
  tsa.mode = 'ok';
  assert.equal(await anchorCode(requestTimestamp('http://127.0.0.1:9/tsr', root('h'), { timeoutMs: 2000 })), 'unavailable');
});

test('the request is a DER TimeStampReq openssl accepts (sha256 imprint, nonce, certReq)', () => {
  const d = root('q');
  const req = buildTimeStampReq(d, 0x1234n);
  const dir = mkdtempSync(join(tmpdir(), 'cp-tsq-'));
  writeFileSync(join(dir, 'q.tsq'), req);
  const out = spawnSync('openssl', ['ts', '-query', '-in', join(dir, 'q.tsq'), '-text'], { encoding: 'utf8' });
  assert.equal(out.status, 0, out.stderr);
  assert.match(out.stdout, /Hash Algorithm: sha256/);
  assert.match(out.stdout, /Nonce: 0x1234/);
  assert.match(out.stdout, /Certificate required: yes/);
});
