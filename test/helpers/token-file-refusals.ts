// The refusals of a login token file read as a secret file is (keys/secret-file.ts), one set for
// every command that reads one: a file others may read or write (ADR 105, as ssh refuses a key),
// a file owned by another user (who could put a token of theirs in it), a link owned by another
// user, or anything but a regular file (a FIFO held the start for ever) is refused, exit 2,
// named, before anything listens; the token is never echoed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, chownSync, lchownSync, symlinkSync, writeFileSync } from 'node:fs';
import { execFileSync, type SpawnSyncReturns } from 'node:child_process';
import { join } from 'node:path';
import { tempDir } from './cli.js';

const OTHER = 4242; // neither the reader nor root
const asRoot = process.geteuid?.() === 0 ? {} : { skip: 'chown needs root' };

/**
 * Registers the three cases for a command `serve(file)` run with `file` as its token file (bounded,
 * so that a start waiting for a FIFO's writer fails, not hangs); `line` is a token file's content,
 * holding CANARY.
 */
export function tokenFileRefusals(serve: (file: string) => SpawnSyncReturns<string>, line: string): void {
  const dir = tempDir('cloakpipe-token-file-');
  const tokenFile = (name: string) => {
    const p = join(dir, name);
    writeFileSync(p, line, { mode: 0o600 });
    return p;
  };
  const refused = (file: string, why: RegExp) => {
    const r = serve(file);
    assert.equal(r.status, 2, `${file}: status ${r.status} signal ${r.signal}: ${r.stderr}`);
    assert.match(r.stderr, why);
    assert.doesNotMatch(r.stderr + r.stdout, /CANARY/, 'no token is echoed');
  };

  test('a token file its group or others may read or write is refused, named for what is wrong and how to fix it', () => {
    // 0620 was "readable by others": neither was true, and the group's write went unsaid.
    const why: [number, RegExp][] = [
      [0o644, /is readable by others \(mode must be 0600\): it is 0644; chmod 600 /],
      [0o640, /is readable by its group \(mode must be 0600\): it is 0640; chmod 600 /],
      [0o604, /is readable by others \(mode must be 0600\): it is 0604; chmod 600 /],
      [0o620, /is writable by its group \(mode must be 0600\): it is 0620; chmod 600 /],
      [0o664, /is readable by others, writable by its group \(mode must be 0600\)/],
    ];
    for (const [mode, expected] of why) {
      const p = tokenFile(`mode-${mode.toString(8)}`);
      chmodSync(p, mode); // not through the umask
      refused(p, expected);
    }
  });

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
}
