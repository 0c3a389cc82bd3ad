// `cloakpipe init` on a home that already holds something: never a second key, never a key beside
// a ledger it did not sign, and a refusal that says what to do when the home is half made (an
// init killed between its key and its databases). A full disk: test/e2e/disk-full.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cloakpipe, makeHome } from '../helpers/cli.js';

const HINT = /if an init was killed before it finished, move the home away and run init again; if the ledger was removed, restore it/;

test('init on a home with a key: exit 2, the key byte for byte; the hint to move a half-made home away only where its ledger is missing and it is not a fleet home', () => {
  const home = makeHome();
  const key = readFileSync(join(home, 'gate.key'));

  let r = cloakpipe(['init', '--home', home]);
  assert.equal(r.status, 2);
  assert.equal(r.stderr, `cloakpipe init: ${join(home, 'gate.key')} exists; refusing to overwrite a gate key\n`);

  // Killed between the key and the databases.
  for (const f of ['ledger.db', 'ledger.db-wal', 'ledger.db-shm', 'operations.db', 'operations.db-wal', 'operations.db-shm']) rmSync(join(home, f), { force: true });
  r = cloakpipe(['init', '--home', home]);
  assert.equal(r.status, 2);
  assert.match(r.stderr, new RegExp(`^cloakpipe init: ${join(home, 'gate.key').replace(/[.]/g, '\\.')} exists; refusing to overwrite a gate key \\(the home has no ${join(home, 'ledger.db').replace(/[.]/g, '\\.')}: `));
  assert.match(r.stderr, HINT);

  // A fleet gate's home keeps no ledger: no such hint.
  writeFileSync(join(home, 'gate-id'), 'gate-a\n', { mode: 0o600 });
  r = cloakpipe(['init', '--home', home]);
  assert.equal(r.status, 2);
  assert.doesNotMatch(r.stderr, HINT);
  assert.deepEqual(readFileSync(join(home, 'gate.key')), key, 'the key is never touched');
});

test('init on a home with a ledger and no key: exit 2, nothing created beside the ledger', () => {
  const home = makeHome();
  rmSync(join(home, 'gate.key'));
  const r = cloakpipe(['init', '--home', home]);
  assert.equal(r.status, 2);
  assert.match(r.stderr, /ledger\.db exists without its gate key; refusing to create a new key beside an existing ledger database/);
  assert.throws(() => readFileSync(join(home, 'gate.key')), { code: 'ENOENT' });
});

test('init that fails midway leaves nothing behind: the folders it made (home, its parents, the inbox) are removed with its files; a home that was there stays, as it was', () => {
  const root = mkdtempSync(join(tmpdir(), 'cp-init-undo-'));
  try {
    // A token whose module is not there: refused after the home and its inbox were made.
    const key = `pkcs11:token=t;object=gate?module-path=${join(root, 'no-such-module.so')}`;
    const home = join(root, 'new', 'deeper', 'home');
    let r = cloakpipe(['init', '--home', home, '--key', key]);
    assert.equal(r.status, 2, r.stderr);
    assert.deepEqual(readdirSync(root), [], 'no folder left of the home or its parents');

    const existing = join(root, 'existing');
    mkdirSync(existing, { mode: 0o700 });
    r = cloakpipe(['init', '--home', existing, '--key', key]);
    assert.equal(r.status, 2, r.stderr);
    assert.deepEqual(readdirSync(existing), [], 'the home that was there is kept, empty, without an inbox');
    assert.equal(statSync(existing).mode & 0o777, 0o700);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
