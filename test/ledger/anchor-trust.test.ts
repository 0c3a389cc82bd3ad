// A --tsa-root with no usable certificate or a --rekor-key that is no public key is refused at
// start (exit 2, named, nothing spawned), like every other file the gate needs. Before, the gate
// started and served, and every epoch's anchor failed (anchor_failure key_invalid) for as long as
// it ran; ledger anchor tried the network and recorded failures. The real binary.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { cloakpipe, makeHome, tempDir, writeFiles, PERMIT_ALL } from '../helpers/cli.js';
import { ledgerOf } from '../helpers/gate.js';

const files = writeFiles({ 'm.yaml': 'version: 1\nrelease: trust@1\ntools: {}\n', 'p.cedar': PERMIT_ALL });
// Files an operator may pass by mistake: the gate's public key as the TSA root, the manifest as the log key.
const wrong = (home: string) => ({ tsaRoot: join(home, 'gate.pub'), rekorKey: files['m.yaml'] });

test('mcp-proxy with a --tsa-root or --rekor-key that does not parse: exit 2, named, the upstream never spawned', () => {
  const home = makeHome();
  const w = wrong(home);
  for (const [flags, message] of [
    [['--tsa', 'http://127.0.0.1:9/tsr', '--tsa-root', w.tsaRoot], /cannot start: tsa root: no certificate/],
    [['--rekor', 'http://127.0.0.1:9', '--rekor-key', w.rekorKey], /cannot start: rekor key: not a PEM public key/],
  ] as const) {
    const marker = join(tempDir(), 'spawned');
    const r = cloakpipe(['mcp-proxy', '--home', home, '--manifest', files['m.yaml'], '--policy', files['p.cedar'], ...flags, '--', 'sh', '-c', 'touch "$0"; cat >/dev/null', marker], { input: '' });
    assert.equal(r.status, 2, r.stderr);
    assert.match(r.stderr, message);
    assert.equal(existsSync(marker), false, 'nothing spawned');
  }
  assert.deepEqual(ledgerOf(home), [], 'nothing recorded');
});

test('ledger anchor with a --tsa-root or --rekor-key that does not parse: exit 2, named, nothing sealed', () => {
  const home = makeHome();
  const w = wrong(home);
  // Something to seal: a gate that starts and ends.
  const g = cloakpipe(['mcp-proxy', '--home', home, '--manifest', files['m.yaml'], '--policy', files['p.cedar'], '--', 'sh', '-c', 'cat >/dev/null'], { input: '' });
  assert.equal(g.status, 0, g.stderr);
  const before = ledgerOf(home).map((e) => e.kind);
  assert.deepEqual(before, ['startup', 'shutdown']);
  for (const [flags, message] of [
    [['--tsa', 'http://127.0.0.1:9/tsr', '--tsa-root', w.tsaRoot], /tsa root: no certificate/],
    [['--rekor', 'http://127.0.0.1:9', '--rekor-key', w.rekorKey], /rekor key: not a PEM public key/],
  ] as const) {
    const r = cloakpipe(['ledger', 'anchor', '--home', home, ...flags]);
    assert.equal(r.status, 2, r.stdout + r.stderr);
    assert.match(r.stderr, message);
  }
  assert.deepEqual(ledgerOf(home).map((e) => e.kind), before, 'nothing sealed or recorded');
});
