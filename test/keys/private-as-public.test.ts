// A private key given where a public one is asked is refused, named, and never printed: an
// approver's private key as the gate's --approver-key (which would put the approver's signing key
// on the gate's host), a private key as --rekor-key (mcp-proxy, ledger anchor, verify, anchor
// verify) or as verify's --public-key. node:crypto derives a public key from a private PEM
// silently, so each of these used to start or verify with it. The real binary.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { generateKeyPairSync } from 'node:crypto';
import { join } from 'node:path';
import { cloakpipe, makeHome, tempDir, writeFiles, PERMIT_ALL } from '../helpers/cli.js';

const files = writeFiles({ 'm.yaml': 'version: 1\nrelease: private-as-public@1\ntools: {}\n', 'p.cedar': PERMIT_ALL });

/** The key material of a PEM file: its base64 lines, none of which may be printed. */
const bodyLines = (pem: string) => pem.split('\n').filter((l) => l && !l.startsWith('-----'));

function refused(r: { status: number | null; stdout: string; stderr: string }, pem: string, what: RegExp) {
  assert.equal(r.status, 2, r.stdout + r.stderr);
  assert.match(r.stderr, what);
  assert.match(r.stderr, /is a private key: give its public half/);
  for (const line of bodyLines(pem)) assert.ok(!(r.stdout + r.stderr).includes(line), 'the private key was printed');
}

test('a private key as --approver-key, --rekor-key or verify --public-key: exit 2, named, the key not printed', () => {
  const home = makeHome();
  const dir = tempDir();
  assert.equal(cloakpipe(['keygen', '--out', join(dir, 'approver')]).status, 0);
  const approverKey = join(dir, 'approver.key');
  const approverPem = readFileSync(approverKey, 'utf8');
  // A log's key as a PKCS#8 EC key, and one as an encrypted PKCS#8 key.
  const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey;
  const rekorKey = join(dir, 'rekor.key');
  writeFileSync(rekorKey, ec.export({ type: 'pkcs8', format: 'pem' }));
  const sealed = join(dir, 'sealed.key');
  writeFileSync(sealed, ec.export({ type: 'pkcs8', format: 'pem', cipher: 'aes-256-cbc', passphrase: 'x' }));

  const marker = join(tempDir(), 'spawned');
  const gate = (flags: string[]) =>
    cloakpipe(['mcp-proxy', '--home', home, '--manifest', files['m.yaml'], '--policy', files['p.cedar'], ...flags, '--', 'sh', '-c', 'touch "$0"; cat >/dev/null', marker], { input: '' });
  refused(gate(['--approver-key', approverKey]), approverPem, /approver\.key/);
  refused(gate(['--rekor', 'http://127.0.0.1:9', '--rekor-key', rekorKey]), readFileSync(rekorKey, 'utf8'), /Rekor key .*rekor\.key/);
  assert.equal(existsSync(marker), false, 'nothing spawned');

  refused(cloakpipe(['ledger', 'anchor', '--home', home, '--rekor', 'http://127.0.0.1:9', '--rekor-key', sealed]), readFileSync(sealed, 'utf8'), /Rekor key .*sealed\.key/);
  refused(cloakpipe(['verify', '--home', home, '--public-key', join(home, 'gate.key')]), readFileSync(join(home, 'gate.key'), 'utf8'), /public key .*gate\.key/);
  refused(cloakpipe(['verify', '--home', home, '--rekor-key', rekorKey]), readFileSync(rekorKey, 'utf8'), /Rekor key/);
  const entry = join(dir, 'entry.json');
  writeFileSync(entry, '{}');
  refused(cloakpipe(['anchor', 'verify', '--rekor-entry', entry, '--rekor-key', rekorKey]), readFileSync(rekorKey, 'utf8'), /Rekor key/);

  // The public halves are taken.
  const ok = gate(['--approver-key', join(dir, 'approver.pub')]);
  assert.equal(ok.status, 0, ok.stderr);
  const v = cloakpipe(['verify', '--home', home, '--public-key', join(home, 'gate.pub')]);
  assert.equal(v.status, 0, v.stdout + v.stderr);
});
