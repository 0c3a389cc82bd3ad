// `cloakpipe anchor verify` through the built binary, on the real public-log fixtures.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CLI, REKOR_ENTRIES, TSA_TOKENS, fixturePath } from '../helpers/public-log.js';

function cli(...args: string[]) {
  const r = spawnSync(process.execPath, [CLI, 'anchor', ...args], { encoding: 'utf8' });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

test('every Rekor fixture verifies through the binary (exit 0) and prints what it checked', () => {
  for (const name of REKOR_ENTRIES) {
    const r = cli('verify', '--rekor-entry', fixturePath(name), '--rekor-key', fixturePath('rekor-public.pem'));
    assert.equal(r.code, 0, r.out + r.err);
    assert.match(r.out, /rekor entry: valid/);
    assert.match(r.out, /log id\s+c0d23d6a/);
    assert.match(r.out, /signed entry timestamp, inclusion proof, checkpoint signature/);
  }
});

test('every TSA fixture verifies through the binary, with --digest; another digest exits 1', () => {
  for (const f of TSA_TOKENS) {
    const ok = cli('verify', '--tsa-token', fixturePath(f.token), '--tsa-root', fixturePath(f.chain), '--digest', `sha256:${f.meta.messageImprintHex}`);
    assert.equal(ok.code, 0, ok.out + ok.err);
    assert.match(ok.out, /rfc3161 token: valid/);
    assert.match(ok.out, new RegExp(`genTime\\s+${new Date(f.meta.genTime).toISOString()}`));
    const bad = cli('verify', '--tsa-token', fixturePath(f.token), '--tsa-root', fixturePath(f.chain), '--digest', `sha256:${'00'.repeat(32)}`);
    assert.equal(bad.code, 1);
    assert.match(bad.out, /INVALID \(imprint_mismatch\)/);
  }
});

test('--json reports valid and invalid results with the reason code', () => {
  const ok = cli('verify', '--rekor-entry', fixturePath('rekor-entry-1.json'), '--rekor-key', fixturePath('rekor-public.pem'), '--digest', 'sha256:a0cfc71271d6e278e57cd332ff957c3f7043fdda354c4cbb190a30d56efa01bf', '--json');
  assert.equal(ok.code, 0);
  const j = JSON.parse(ok.out);
  assert.equal(j.valid, true);
  assert.equal(j.logIndex, 27246492);
  const bad = cli('verify', '--rekor-entry', fixturePath('rekor-entry-1.json'), '--rekor-key', fixturePath('rekor-public.pem'), '--digest', `sha256:${'11'.repeat(32)}`, '--json');
  assert.equal(bad.code, 1);
  assert.deepEqual(Object.keys(JSON.parse(bad.out)).sort(), ['detail', 'reason', 'type', 'valid']);
  assert.equal(JSON.parse(bad.out).reason, 'body_mismatch');
});

test('a tampered entry file exits 1 with the reason', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cp-anchor-'));
  const e = JSON.parse(readFileSync(fixturePath('rekor-entry-4.json'), 'utf8'));
  e.integratedTime += 1;
  writeFileSync(join(dir, 'e.json'), JSON.stringify(e));
  const r = cli('verify', '--rekor-entry', join(dir, 'e.json'), '--rekor-key', fixturePath('rekor-public.pem'));
  assert.equal(r.code, 1);
  assert.match(r.out, /INVALID \(set_invalid\)/);
  const der = readFileSync(fixturePath('tsa-token-2.der'));
  der[der.length - 5] ^= 1;
  writeFileSync(join(dir, 't.der'), der);
  const t = cli('verify', '--tsa-token', join(dir, 't.der'), '--tsa-root', fixturePath('tsa-chain-2.pem'));
  assert.equal(t.code, 1);
  assert.match(t.out, /INVALID \(tsa_signature_invalid\)/);
});

test('usage errors exit 2', () => {
  const cases: string[][] = [
    ['verify'],
    ['verify', '--rekor-entry', fixturePath('rekor-entry-1.json')],
    ['verify', '--tsa-token', fixturePath('tsa-token-1.der')],
    ['verify', '--rekor-entry', fixturePath('rekor-entry-1.json'), '--rekor-key', fixturePath('rekor-public.pem'), '--tsa-token', fixturePath('tsa-token-1.der'), '--tsa-root', fixturePath('tsa-chain-1.pem')],
    ['verify', '--rekor-entry', fixturePath('rekor-entry-1.json'), '--rekor-key', fixturePath('rekor-public.pem'), '--digest', 'sha256:xyz'],
    ['verify', '--rekor-entry', fixturePath('rekor-entry-1.json'), '--rekor-key', fixturePath('rekor-public.pem'), '--bogus'],
    ['verify', '--rekor-entry', '/nonexistent', '--rekor-key', fixturePath('rekor-public.pem')],
    ['verify', '--rekor-entry', fixturePath('rekor-entry-1.json'), '--rekor-key', fixturePath('README.md')],
    ['frobnicate'],
  ];
  for (const args of cases) assert.equal(cli(...args).code, 2, args.join(' '));
  const h = cli('verify', '--help');
  assert.equal(h.code, 0);
  assert.match(h.out, /usage: cloakpipe anchor verify/);
});
