// Evidence end to end: the real gate binary in front of @modelcontextprotocol/server-everything,
// anchoring every second to a real RFC 3161 TSA (openssl) and the in-repo Rekor-compatible log;
// `cloakpipe verify --require-anchors` then passes offline. With the TSA down the gate keeps
// serving and records anchor_failure; a gate killed with SIGKILL leaves a ledger that verifies,
// its tail reported unanchored until `cloakpipe ledger anchor` seals and anchors it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { readFileSync } from 'node:fs';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { CLI, EVERYTHING, MODULE_LOG_PRELOAD, makeHome, cloakpipe, tempDir } from '../helpers/cli.js';
import { RawGate } from '../helpers/raw-gate.js';
import { startOpensslTsa } from '../helpers/openssl-tsa.js';
import { evidenceSuite } from '../helpers/evidence-suite.js';

const ev = evidenceSuite({ release: 'evidence-test@1', tsaName: 'Evidence TSA' });
const { gate, anchorFlags, echo, verify } = ev;

const ledger = (home: string) => cloakpipe(['ledger', 'show', '--home', home, '--json']).stdout.trim().split('\n').map((l) => JSON.parse(l));
// The TSA and the log run in this process: commands that reach them must not block it.
const execFileP = promisify(execFile);
async function cloakpipeAsync(args: string[]): Promise<{ status: number; stdout: string; stderr: string }> {
  try {
    const r = await execFileP(process.execPath, [CLI, ...args], { timeout: 120_000 });
    return { status: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (e) {
    const x = e as { code?: number; stdout?: string; stderr?: string };
    return { status: typeof x.code === 'number' ? x.code : -1, stdout: x.stdout ?? '', stderr: x.stderr ?? '' };
  }
}
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test('a gate anchoring every second leaves a ledger that verifies with --require-anchors', async () => {
  const { home, stderr, entries } = await ev.anchoredSession(3);
  const kinds = entries.map((e) => e.kind);
  assert.equal(kinds.at(-1), 'epoch', 'the shutdown epoch is the last entry');
  assert.equal(kinds.at(-2), 'shutdown', 'and it covers the shutdown entry');
  assert.equal(kinds.filter((k) => k === 'anchor_failure').length, 0, stderr);
  const v = verify(home, '--tsa-root', ev.trust.tsaRoot, '--rekor-key', ev.trust.rekorKey, '--require-anchors');
  assert.equal(v.status, 0, v.stdout + v.stderr);
  const epochs = kinds.filter((k) => k === 'epoch').length;
  assert.match(v.stdout, new RegExp(`${entries.length} entries, ${epochs} epochs`));
  assert.match(v.stdout, new RegExp(`rfc3161 ${epochs} verified; rekor ${epochs} verified`));
  // The export verifies on its own with the key obtained separately.
  const out = join(tempDir(), 'ledger.jsonl');
  assert.equal(cloakpipe(['ledger', 'export', '--home', home, '--out', out]).status, 0);
  const ve = cloakpipe(['verify', '--ledger', out, '--public-key', join(home, 'gate.pub'), '--tsa-root', ev.trust.tsaRoot, '--rekor-key', ev.trust.rekorKey, '--require-anchors'], { timeout: 120_000 });
  assert.equal(ve.status, 0, ve.stdout + ve.stderr);
});

test('with the TSA down the gate keeps serving, records anchor_failure, and only --require-anchors fails', async () => {
  const down = await startOpensslTsa('Down TSA');
  const url = down.url;
  await down.close();
  const home = makeHome();
  const g = gate(home, anchorFlags(url, '1s'));
  await g.initialize();
  for (let i = 0; i < 3; i++) await echo(g, `call ${i}`);
  await sleep(1500);
  await echo(g, 'still serving');
  assert.equal(await g.end(), 0, g.stderr);
  const failures = ledger(home).filter((e) => e.kind === 'anchor_failure');
  assert.ok(failures.length >= 1, g.stderr);
  assert.ok(failures.every((e) => e.anchor === 'rfc3161' && e.reason === 'unavailable'), JSON.stringify(failures));
  assert.match(g.stderr, /rfc3161 anchor for epoch \d+ failed \(unavailable\)/);
  const plain = verify(home, '--tsa-root', ev.trust.tsaRoot, '--rekor-key', ev.trust.rekorKey);
  assert.equal(plain.status, 0, plain.stdout + plain.stderr);
  assert.match(plain.stdout, /unanchored\s+\d+ entries from seq 0/);
  const required = verify(home, '--tsa-root', ev.trust.tsaRoot, '--rekor-key', ev.trust.rekorKey, '--require-anchors');
  assert.equal(required.status, 1, required.stdout + required.stderr);
  assert.match(required.stdout, /ledger INVALID at seq 0 \(unanchored\)/);
  // Rekor kept working: for an auditor who only requires Rekor, everything up to the shutdown
  // epoch is anchored; only the failure entry written after it is not.
  const all = ledger(home);
  const lastEpoch = all.filter((e) => e.kind === 'epoch').at(-1);
  const rekorOnly = JSON.parse(verify(home, '--rekor-key', ev.trust.rekorKey, '--json').stdout);
  assert.equal(rekorOnly.anchoredThrough, lastEpoch.seq);
  assert.ok(all.slice(lastEpoch.seq + 1).every((e) => e.kind === 'anchor_failure'));
});

test('a gate killed with SIGKILL leaves a ledger that verifies; its tail is unanchored until ledger anchor', async () => {
  const home = makeHome();
  const g = gate(home, anchorFlags(ev.tsa.url)); // no interval: only what we trigger is sealed
  await g.initialize();
  for (let i = 0; i < 3; i++) await echo(g, `before ${i}`);
  // An operator seals and anchors while the gate runs (a second writer on the same home).
  const a = await cloakpipeAsync(['ledger', 'anchor', '--home', home, '--tsa', ev.tsa.url, '--tsa-root', ev.trust.tsaRoot, '--rekor', ev.rekor.url, '--rekor-key', ev.trust.rekorKey]);
  assert.equal(a.status, 0, a.stdout + a.stderr);
  const sealedAt = Number(/sealed epoch (\d+)/.exec(a.stdout)![1]);
  for (let i = 0; i < 3; i++) await echo(g, `after ${i}`);
  g.child.kill('SIGKILL');
  await g.exited;
  const kinds = ledger(home).map((e) => e.kind);
  assert.notEqual(kinds.at(-1), 'shutdown');
  const plain = verify(home, '--tsa-root', ev.trust.tsaRoot, '--rekor-key', ev.trust.rekorKey);
  assert.equal(plain.status, 0, plain.stdout + plain.stderr);
  assert.match(plain.stdout, new RegExp(`anchored\\s+through seq ${sealedAt}`));
  assert.match(plain.stdout, new RegExp(`unanchored\\s+\\d+ entries from seq ${sealedAt + 1}`));
  const required = verify(home, '--tsa-root', ev.trust.tsaRoot, '--rekor-key', ev.trust.rekorKey, '--require-anchors');
  assert.equal(required.status, 1);
  assert.match(required.stdout, new RegExp(`at seq ${sealedAt + 1} \\(unanchored\\)`));
  const b = await cloakpipeAsync(['ledger', 'anchor', '--home', home, '--tsa', ev.tsa.url, '--tsa-root', ev.trust.tsaRoot, '--rekor', ev.rekor.url, '--rekor-key', ev.trust.rekorKey]);
  assert.equal(b.status, 0, b.stdout + b.stderr);
  const after = verify(home, '--tsa-root', ev.trust.tsaRoot, '--rekor-key', ev.trust.rekorKey, '--require-anchors');
  assert.equal(after.status, 0, after.stdout + after.stderr);
});

test('a gate loads the TSA and Rekor clients only when it is to anchor, and then at start', async () => {
  for (const anchoring of [false, true]) {
    const list = join(tempDir(), 'modules.txt');
    const home = makeHome();
    const g = new RawGate({
      home, manifest: ev.files['m.yaml'], policy: ev.files['p.cedar'], context: ev.files['c.json'],
      flags: anchoring ? anchorFlags(ev.tsa.url) : [], upstream: [process.execPath, EVERYTHING, 'stdio'],
      node: MODULE_LOG_PRELOAD, env: { CLOAKPIPE_TEST_MODULES: list },
    });
    await g.initialize();
    const atStart = readFileSync(list, 'utf8').split('\n');
    await echo(g, 'loaded');
    assert.equal(await g.end(), 0, g.stderr);
    const loaded = readFileSync(list, 'utf8').split('\n');
    assert.ok(loaded.some((u) => u.endsWith('/dist/src/cli/mcp-proxy.js')), 'the log sees the gate\'s own modules');
    for (const client of ['/ledger/anchors/tsa/client.js', '/ledger/anchors/rekor/client.js']) {
      assert.equal(loaded.some((u) => u.endsWith(client)), anchoring, `${anchoring ? 'a gate that anchors loads' : 'a gate without --tsa or --rekor does not load'} ${client}`);
      // A gate that is to anchor loads them before it serves: a broken install fails at start.
      if (anchoring) assert.ok(atStart.some((u) => u.endsWith(client)), `${client} loaded at start`);
    }
    if (!anchoring) assert.ok(!loaded.some((u) => /node_modules\/(pkijs|asn1js|@peculiar)\//.test(u)), 'no X.509 or ASN.1 code without anchors');
    // And the clients loaded that way do their work: the shutdown epoch is anchored, both ways.
    if (anchoring) {
      const kinds = ledger(home).map((e) => e.kind);
      assert.ok(kinds.includes('epoch') && !kinds.includes('anchor_failure'), g.stderr);
      const v = verify(home, '--tsa-root', ev.trust.tsaRoot, '--rekor-key', ev.trust.rekorKey, '--require-anchors');
      assert.equal(v.status, 0, v.stdout + v.stderr);
    }
  }
});
