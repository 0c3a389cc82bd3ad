// approve --out is written as every --out (src/util/out/): replaced whole or not at all, through
// a symbolic link, /dev/stdout as the process's own stream; a new receipt file is 0600.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cloakpipe, tempDir } from '../helpers/cli.js';
import { fingerprintOf } from '../../src/core/call.js';
import { keyIdOf, loadPublicKey } from '../../src/ledger/keys.js';
import { verifyReceipt } from '../../src/approvals/receipt.js';

const dir = tempDir();
assert.equal(cloakpipe(['keygen', '--out', join(dir, 'ann')]).status, 0);
const pub = loadPublicKey(join(dir, 'ann.pub'));
const fp = fingerprintOf('send_email', { to: 'a@example.com' }, null);
const approve = (out: string) => cloakpipe(['approve', '--key', join(dir, 'ann.key'), '--fingerprint', fp, '--out', out]);
const verifies = (text: string) => verifyReceipt(JSON.parse(text), { fingerprint: fp, approvers: new Map([[keyIdOf(pub), pub]]), now: Date.now() }).ok;

test('approve --out over an existing receipt replaces it with the new one, no temporary file left; a new file is 0600', () => {
  const out = join(dir, 'receipt.json');
  let r = approve(out);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(statSync(out).mode & 0o777, 0o600);
  const first = readFileSync(out, 'utf8');
  r = approve(out);
  assert.equal(r.status, 0, r.stderr);
  const second = readFileSync(out, 'utf8');
  assert.notEqual(second, first, 'a new receipt (its own nonce)');
  assert.ok(verifies(second));
  assert.deepEqual(readdirSync(dir).filter((f) => f.endsWith('.tmp')), []);
});

test('approve --out through a symbolic link writes the file it names; --out /dev/stdout writes the receipt there, the path line to stderr', () => {
  const target = join(dir, 'target.json');
  writeFileSync(target, 'old\n', { mode: 0o600 });
  const link = join(dir, 'link.json');
  symlinkSync(target, link);
  let r = approve(link);
  assert.equal(r.status, 0, r.stderr);
  assert.ok(verifies(readFileSync(target, 'utf8')));
  assert.ok(statSync(link).isFile() && readFileSync(link, 'utf8') === readFileSync(target, 'utf8'), 'the link still names the file');

  r = approve('/dev/stdout');
  assert.equal(r.status, 0, r.stderr);
  assert.ok(verifies(r.stdout), 'stdout holds the receipt alone');
  assert.equal(r.stderr, '/dev/stdout\n');
});
