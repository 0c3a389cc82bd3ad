// A key or PIN file must be its reader's own, as ssh wants of an identity file: one owned by
// another user (who can read it at will, or put their own key or PIN in it), a link to one, a link
// another user owns, or a FIFO in its place is refused, named, exit 2, before anything is spawned
// or signed. The real binary on a real home and a real SoftHSM token; files handed to `nobody`
// with chown, so the test runs as root (it says so when it cannot).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chownSync, copyFileSync, lchownSync, renameSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { PERMIT_ALL, cloakpipe, makeHome, tempDir, writeFiles } from '../helpers/cli.js';
import { freshToken, hsmSkip } from '../helpers/softhsm.js';

const NOBODY = 65534;
const asRoot = process.geteuid?.() === 0 ? {} : { skip: 'chown to another user needs root' };
const files = writeFiles({ 'm.yaml': 'version: 1\nrelease: owner@1\ntools: {}\n', 'p.cedar': PERMIT_ALL });

/** The gate on `home`, upstream a shell that reads its stdin to the end: exit 0 once started and stopped. */
function gate(home: string) {
  return cloakpipe(['mcp-proxy', '--home', home, '--manifest', files['m.yaml'], '--policy', files['p.cedar'], '--', 'sh', '-c', 'cat >/dev/null'], { input: '', timeout: 60_000 });
}

/** `path` moved aside and handed to another user; returns where it went. */
function foreignCopy(path: string): string {
  const elsewhere = join(tempDir(), 'theirs');
  copyFileSync(path, elsewhere);
  chownSync(elsewhere, NOBODY, NOBODY);
  return elsewhere;
}

test('a gate key file: owned by another user, a link to such a file, or a link another user owns, is refused (exit 2, named)', asRoot, () => {
  const cases: [string, (key: string) => void, RegExp][] = [
    ['owned by another user', (key) => chownSync(key, NOBODY, NOBODY), /gate key .*gate\.key is owned by another user \(uid 65534\)/],
    [
      'a link to a file another user owns',
      (key) => {
        const theirs = foreignCopy(key);
        renameSync(key, `${key}.mine`);
        symlinkSync(theirs, key);
      },
      /gate key .*gate\.key is owned by another user \(uid 65534\)/,
    ],
    [
      'a link another user owns, to a file of ours',
      (key) => {
        renameSync(key, `${key}.mine`);
        symlinkSync(`${key}.mine`, key);
        lchownSync(key, NOBODY, NOBODY);
      },
      /gate key .*gate\.key is a link owned by another user \(uid 65534\)/,
    ],
  ];
  for (const [name, spoil, refusal] of cases) {
    const home = makeHome();
    assert.equal(gate(home).status, 0, `${name}: the gate starts on the home as made`);
    spoil(join(home, 'gate.key'));
    const r = gate(home);
    assert.equal(r.status, 2, `${name}: ${r.stderr}`);
    assert.match(r.stderr, refusal, name);
  }
});

test('an approver key file owned by another user is refused by approve (exit 2, named)', asRoot, () => {
  const dir = tempDir();
  const made = cloakpipe(['keygen', '--out', join(dir, 'alice')]);
  assert.equal(made.status, 0, made.stderr);
  chownSync(join(dir, 'alice.key'), NOBODY, NOBODY);
  const r = cloakpipe(['approve', '--key', join(dir, 'alice.key'), '--fingerprint', 'sha256:' + '0'.repeat(64)]);
  assert.equal(r.status, 2, r.stderr);
  assert.match(r.stderr, /approver key .*alice\.key is owned by another user \(uid 65534\)/);
  assert.ok(!r.stdout.includes('PRIVATE KEY') && !r.stderr.includes('PRIVATE KEY'));
});

test('a PIN file owned by another user, a link to one, or a FIFO: init --key refuses it (exit 2, named, bounded), the PIN never printed', { ...hsmSkip, ...asRoot }, () => {
  const t = freshToken();
  const env = { ...process.env, ...t.env, CLOAKPIPE_PKCS11_PIN: undefined };
  const theirs = foreignCopy(t.pinFile);
  const link = join(tempDir(), 'pin-link');
  symlinkSync(theirs, link);
  const fifo = join(tempDir(), 'pin-fifo');
  assert.equal(spawnSync('mkfifo', ['-m', '600', fifo]).status, 0, 'mkfifo');
  const cases: [string, string, RegExp][] = [
    ['owned by another user', theirs, /PIN file .* is owned by another user \(uid 65534\)/],
    ['a link to a file another user owns', link, /PIN file .*pin-link is owned by another user \(uid 65534\)/],
    ['a FIFO', fifo, /PIN file .*pin-fifo \(not a regular file\)/],
  ];
  for (const [name, pinFile, refusal] of cases) {
    const r = cloakpipe(['init', '--home', join(tempDir(), 'home'), '--key', t.uri(), '--pin-file', pinFile], { env, timeout: 60_000 });
    assert.equal(r.status, 2, `${name}: ${r.error ? 'still running after 60 s' : r.stderr}`);
    assert.match(r.stderr, refusal, name);
    assert.ok(!(r.stdout + r.stderr).includes(t.pin), `${name}: the PIN is not printed`);
  }
  // The token's own file, as made, still opens it.
  const ok = cloakpipe(['init', '--home', join(tempDir(), 'home'), '--key', t.uri(), '--pin-file', t.pinFile], { env });
  assert.equal(ok.status, 0, ok.stderr);
});
