// An anchor whose time precedes the entries it seals is not stored. `verify` holds a stored TSA
// token's genTime and a Rekor entry's integratedTime to the epoch's last entry (rounded down to
// the second); a gate whose clock runs ahead of its TSA and log obtained anchors that failed that
// check and stored them, so its honest ledger then verified as INVALID (anchor_invalid,
// gentime_before), as if edited. Now the gate checks the bound before storing: the anchor is an
// anchor_failure (gentime_before) and the epoch stays unanchored, which verify reports as such.
// The real binary (its clock an hour ahead by a preload), a real openssl TSA and the in-repo log.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { cloakpipe, helperScript, makeHome, tempDir, writeFiles, PERMIT_ALL } from '../helpers/cli.js';
import { ledgerOf } from '../helpers/gate.js';
import { RawGate } from '../helpers/raw-gate.js';
import { startOpensslTsa, type TestTsa } from '../helpers/openssl-tsa.js';
import { startFakeRekor, type FakeRekor } from '../helpers/fake-rekor.js';

let tsa: TestTsa;
let rekor: FakeRekor;
const trust = { tsaRoot: '', rekorKey: '' };
before(async () => {
  [tsa, rekor] = await Promise.all([startOpensslTsa('Time TSA'), startFakeRekor()]);
  const dir = tempDir();
  trust.tsaRoot = join(dir, 'tsa.pem');
  trust.rekorKey = join(dir, 'rekor.pem');
  writeFileSync(trust.tsaRoot, tsa.chainPem);
  writeFileSync(trust.rekorKey, rekor.publicKeyPem);
});
after(async () => {
  await Promise.all([tsa?.close(), rekor?.close()]);
});

/** A gate on `home` that starts and ends, anchoring its shutdown epoch, its clock `skewMs` off. */
async function gateRun(home: string, skewMs: number): Promise<void> {
  const files = writeFiles({ 'm.yaml': 'version: 1\nrelease: time@1\ntools: {}\n', 'p.cedar': PERMIT_ALL });
  const g = new RawGate({
    home,
    manifest: files['m.yaml'],
    policy: files['p.cedar'],
    flags: ['--tsa', tsa.url, '--tsa-root', trust.tsaRoot, '--rekor', rekor.url, '--rekor-key', trust.rekorKey],
    upstream: [process.execPath, '-e', 'process.stdin.resume(); process.stdin.on("end", () => process.exit(0))'],
    node: ['--import', pathToFileURL(helperScript('clock-skew-preload.js')).href],
    env: { CLOAKPIPE_TEST_CLOCK_SKEW_MS: String(skewMs) },
  });
  assert.equal(await g.end(), 0, g.stderr);
}

const verify = (home: string) => cloakpipe(['verify', '--home', home, '--tsa-root', trust.tsaRoot, '--rekor-key', trust.rekorKey], { timeout: 120_000 });

test('a gate an hour ahead of its TSA and log stores neither anchor: anchor_failure gentime_before, and verify passes (unanchored)', async () => {
  const home = makeHome();
  await gateRun(home, 3_600_000);
  const entries = ledgerOf(home);
  const failures = entries.filter((e) => e.kind === 'anchor_failure').map((e) => `${e.anchor} ${e.reason}`);
  assert.deepEqual(failures.sort(), ['rekor gentime_before', 'rfc3161 gentime_before']);
  const v = verify(home);
  assert.equal(v.status, 0, v.stdout + v.stderr);
  assert.match(v.stdout, /unanchored\s+\d+ entries from seq 0/);
});

test('the same gate on time: both anchors stored and verified', async () => {
  const home = makeHome();
  await gateRun(home, 0);
  assert.deepEqual(ledgerOf(home).filter((e) => e.kind === 'anchor_failure'), []);
  const v = cloakpipe(['verify', '--home', home, '--tsa-root', trust.tsaRoot, '--rekor-key', trust.rekorKey, '--require-anchors'], { timeout: 120_000 });
  assert.equal(v.status, 0, v.stdout + v.stderr);
});
