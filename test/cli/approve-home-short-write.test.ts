// `approve --home` drops a receipt into the gate's inbox. It was written with one write(2), which
// may write less than asked (a full disk, a file size limit) and say so only in its count: the
// rest was dropped, the short file renamed into the inbox, exit 0. Through the real binary under
// a 200-byte file size limit (prlimit), which the kernel enforces by cutting the write short.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CLI, cloakpipe, makeHome, tempDir } from '../helpers/cli.js';

const prlimit = spawnSync('prlimit', ['--version']).status === 0 ? {} : { skip: 'prlimit (util-linux) is not installed' };

test('approve --home under a file size limit smaller than the receipt: refused, exit 2, nothing in the inbox; without the limit, one whole receipt', prlimit, () => {
  const home = makeHome();
  const key = join(tempDir(), 'approver');
  assert.equal(cloakpipe(['keygen', '--out', key]).status, 0);
  const args = [CLI, 'approve', '--key', `${key}.key`, '--fingerprint', `sha256:${'a'.repeat(64)}`, '--home', home];
  const inbox = join(home, 'approvals');
  const cut = spawnSync('prlimit', ['--fsize=200:200', process.execPath, ...args], { encoding: 'utf8', timeout: 30_000 });
  assert.equal(cut.status, 2, cut.stdout + cut.stderr);
  assert.match(cut.stderr, /cannot write into .*approvals: EFBIG/);
  assert.deepEqual(existsSync(inbox) ? readdirSync(inbox) : [], [], 'no receipt, whole or cut, and no temporary file');

  const whole = spawnSync(process.execPath, args, { encoding: 'utf8', timeout: 30_000 });
  assert.equal(whole.status, 0, whole.stderr);
  const files = readdirSync(inbox);
  assert.equal(files.length, 1);
  assert.ok(JSON.parse(readFileSync(join(inbox, files[0]), 'utf8')).signature, 'a whole receipt');
});
