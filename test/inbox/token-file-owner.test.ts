// `inbox serve --auth-token-file` reads its login token as the gate reads a key or PIN file
// (keys/secret-file.ts): a file of another user (who can read it, or put a token of theirs in
// it and log in), a link of another user, or anything but a regular file (a FIFO holds the read
// for ever) is refused, exit 2, named, before anything listens; the token is never echoed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chownSync, lchownSync, symlinkSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { cloakpipe, makeHome, tempDir } from '../helpers/cli.js';
import { keygen } from '../helpers/recording-gate.js';

const dir = tempDir('cloakpipe-inbox-token-file-');
keygen(join(dir, 'approver'));
const KEY = join(dir, 'approver.key');
const home = makeHome();
const TOKEN = 'inbox-login-token-CANARY-0123456789';
const OTHER = 4242; // a uid that is neither the reader nor root
const asRoot = process.geteuid?.() === 0 ? {} : { skip: 'chown needs root' };
// Bounded: a read that waits for a FIFO's writer is a failure, not a hang.
const serve = (file: string) => cloakpipe(['inbox', 'serve', '--home', home, '--approver-key', KEY, '--listen', '127.0.0.1:0', '--auth-token-file', file], { timeout: 10_000 });

function tokenFile(name: string): string {
  const p = join(dir, name);
  writeFileSync(p, `${TOKEN}\n`, { mode: 0o600 });
  return p;
}

function refused(file: string, why: RegExp): void {
  const r = serve(file);
  assert.equal(r.status, 2, `${file}: status ${r.status} signal ${r.signal}: ${r.stderr}`);
  assert.match(r.stderr, why);
  assert.doesNotMatch(r.stderr + r.stdout, /CANARY/, 'the token is never echoed');
}

test('a token file owned by another user is refused', asRoot, () => {
  const p = tokenFile('theirs');
  chownSync(p, OTHER, OTHER);
  refused(p, /owned by another user/);
});

test('a link owned by another user, even to a file of the reader, is refused', asRoot, () => {
  const link = join(dir, 'their-link');
  symlinkSync(tokenFile('mine'), link);
  lchownSync(link, OTHER, OTHER);
  refused(link, /link owned by another user/);
});

test('a FIFO in the token file place is refused, not waited on', () => {
  const fifo = join(dir, 'fifo');
  execFileSync('mkfifo', ['-m', '600', fifo]);
  refused(fifo, /not a regular file|cannot read/);
});

