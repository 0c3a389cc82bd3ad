// A TSA or a Rekor log that answers a byte at a time and never finishes: --timeout bounds the
// whole exchange, not the silence between bytes. Before, `ledger anchor --timeout 1s` and a gate's
// shutdown epoch waited on such a peer for as long as it kept dripping (the gate never exited on
// end of input). The real binary, and a server of the test that misbehaves on purpose.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cloakpipeAsync, makeHome, tempDir, writeFiles, PERMIT_ALL } from '../helpers/cli.js';
import { listenLocal } from '../helpers/local-http.js';
import { ledgerOf } from '../helpers/gate.js';
import { RawGate } from '../helpers/raw-gate.js';
import { startOpensslTsa } from '../helpers/openssl-tsa.js';
import { startFakeRekor } from '../helpers/fake-rekor.js';

/** Answers every request 200 and then one byte every 100 ms, for as long as the client listens. */
async function drippingServer() {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      const t = setInterval(() => res.write('x'), 100);
      res.on('close', () => clearInterval(t));
    });
  });
  const local = await listenLocal(server);
  return { url: local.url, close: local.close };
}

/** Trust files of a real TSA and log (the dripping peer never gets far enough to be checked). */
async function trustFiles() {
  const [tsa, rekor] = await Promise.all([startOpensslTsa('Deadline TSA'), startFakeRekor()]);
  const dir = tempDir();
  const files = { tsaRoot: join(dir, 'tsa.pem'), rekorKey: join(dir, 'rekor.pem') };
  writeFileSync(files.tsaRoot, tsa.chainPem);
  writeFileSync(files.rekorKey, rekor.publicKeyPem);
  await Promise.all([tsa.close(), rekor.close()]);
  return files;
}

test('ledger anchor --timeout 1s against a TSA and a log that drip: exit 1, both unavailable, recorded', { timeout: 120_000 }, async () => {
  const drip = await drippingServer();
  const trust = await trustFiles();
  try {
    const home = makeHome();
    // Something to seal: a gate that starts and ends (startup and shutdown entries).
    const g = gateOn(home, []);
    assert.equal(await g.end(), 0, g.stderr);
    const r = await cloakpipeAsync([
      'ledger', 'anchor', '--home', home, '--timeout', '1s', '--json',
      '--tsa', `${drip.url}/tsr`, '--tsa-root', trust.tsaRoot, '--rekor', drip.url, '--rekor-key', trust.rekorKey,
    ]);
    assert.equal(r.status, 1, r.stdout + r.stderr);
    const out = JSON.parse(r.stdout);
    assert.deepEqual(out.anchors.map((a: { kind: string; reason: string }) => `${a.kind} ${a.reason}`).sort(), ['rekor unavailable', 'rfc3161 unavailable']);
    assert.match(r.stderr, /rfc3161 anchor for epoch \d+ failed \(unavailable\)/);
    const failures = ledgerOf(home).filter((e) => e.kind === 'anchor_failure');
    assert.deepEqual(failures.map((e) => `${e.anchor} ${e.reason}`).sort(), ['rekor unavailable', 'rfc3161 unavailable']);
  } finally {
    await drip.close();
  }
});

let files: Record<string, string> | undefined;
function gateOn(home: string, flags: string[]): RawGate {
  files ??= writeFiles({ 'm.yaml': 'version: 1\nrelease: deadline@1\ntools: {}\n', 'p.cedar': PERMIT_ALL });
  return new RawGate({ home, manifest: files['m.yaml'], policy: files['p.cedar'], flags, upstream: [process.execPath, '-e', 'process.stdin.resume(); process.stdin.on("end", () => process.exit(0))'] });
}

test('a gate whose TSA drips still ends: its shutdown epoch records the anchor unavailable', { timeout: 120_000 }, async () => {
  const drip = await drippingServer();
  const trust = await trustFiles();
  try {
    const home = makeHome();
    const g = gateOn(home, ['--tsa', `${drip.url}/tsr`, '--tsa-root', trust.tsaRoot]);
    assert.equal(await g.end(), 0, g.stderr);
    const kinds = ledgerOf(home).map((e) => `${e.kind}${e.kind === 'anchor_failure' ? ` ${e.anchor} ${e.reason}` : ''}`);
    assert.deepEqual(kinds.slice(-3), ['shutdown', 'epoch', 'anchor_failure rfc3161 unavailable']);
  } finally {
    await drip.close();
  }
});
