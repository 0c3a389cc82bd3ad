// `http-proxy --auth-token-file` (and llm-proxy's) is read as a secret file is
// (keys/secret-file.ts), but for its mode: a file owned by another user (who could add a token
// of theirs for any agent id), a link owned by another user, or anything but a regular file
// (a FIFO held the start for ever) is refused, exit 2, named, before anything listens.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chownSync, lchownSync, symlinkSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { cloakpipe, makeHome, tempDir, writeFiles, PERMIT_ALL, MEMORY } from '../helpers/cli.js';

const dir = tempDir('cloakpipe-http-token-file-');
const home = makeHome();
const f = writeFiles({ 'm.yaml': 'version: 1\nrelease: token-file@1\ntools:\n  read_graph: { effect: read, arguments: {} }\n', 'p.cedar': PERMIT_ALL });
const OTHER = 4242; // neither the reader nor root
const asRoot = process.geteuid?.() === 0 ? {} : { skip: 'chown needs root' };
// Bounded: a start that waits for a FIFO's writer is a failure, not a hang.
const serve = (file: string) =>
  cloakpipe(['http-proxy', '--home', home, '--manifest', f['m.yaml'], '--policy', f['p.cedar'], '--listen', '127.0.0.1:0', '--auth-token-file', file, '--', process.execPath, MEMORY], { timeout: 10_000 });

function tokenFile(name: string): string {
  const p = join(dir, name);
  writeFileSync(p, 'TOKEN-CANARY-0123456789abcdef agent-a\n', { mode: 0o600 });
  return p;
}

function refused(file: string, why: RegExp): void {
  const r = serve(file);
  assert.equal(r.status, 2, `${file}: status ${r.status} signal ${r.signal}: ${r.stderr}`);
  assert.match(r.stderr, why);
  assert.doesNotMatch(r.stderr + r.stdout, /CANARY/, 'no token is echoed');
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
