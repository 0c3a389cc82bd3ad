// init --store postgres://… that the store refuses leaves nothing behind: no home, no token key.
// Before, a store it could not reach (or one that would not register the gate) left a home with
// a key and a gate-id that no store had taken: every later init on it was refused as over a key
// ('gate.key exists', or 'this home is gate "a"' for the other --gate-id the message suggested),
// and with --key pkcs11:… a key pair was generated in the token for a home that never was. A
// retry on a reachable store then completes. The real binary, real SoftHSM and PostgreSQL.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { cloakpipe, tempDir } from '../helpers/cli.js';
import { freshToken, hsmSkip, pkcs, straightToToken } from '../helpers/softhsm.js';
import { pgSkip } from '../store/postgres/pg.js';
import { freshDatabase } from '../helpers/fleet.js';

/** A loopback port nothing listens on: a database that cannot be reached. */
async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address() as { port: number };
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

test('an unreachable store: exit 2, named, no home left; init on that home then works', async () => {
  const store = `postgres://cloakpipe@127.0.0.1:${await closedPort()}/db`;
  const home = join(tempDir(), 'home');
  const r = cloakpipe(['init', '--home', home, '--store', store, '--gate-id', 'gate-a']);
  assert.equal(r.status, 2, r.stderr);
  assert.match(r.stderr, /the PostgreSQL store could not be read: PostgreSQL error ECONNREFUSED/);
  assert.equal(existsSync(home), false, 'no half-made home');
  const again = cloakpipe(['init', '--home', home]);
  assert.equal(again.status, 0, again.stderr);
});

test('an unreachable store with --key pkcs11:…: no key pair is generated in the token', hsmSkip, async () => {
  const t = freshToken();
  const env = { ...process.env, ...t.env, CLOAKPIPE_PKCS11_PIN: t.pin };
  const home = join(tempDir(), 'home');
  const r = cloakpipe(['init', '--home', home, '--store', `postgres://cloakpipe@127.0.0.1:${await closedPort()}/db`, '--gate-id', 'gate-a', '--key', t.uri()], { env });
  assert.equal(r.status, 2, r.stderr);
  assert.equal(existsSync(home), false);
  const objects = straightToToken(t, t.pin, (p, session) => {
    p.C_FindObjectsInit(session, [{ type: pkcs.CKA_LABEL, value: 'gate' }]);
    try {
      return p.C_FindObjects(session, 8).length;
    } finally {
      p.C_FindObjectsFinal(session);
    }
  });
  assert.equal(objects, 0, 'the token holds nothing made for the refused home');
});

test('a store that will not register the gate (its id taken by another key): no home left; another --gate-id then works', pgSkip, async () => {
  const url = await freshDatabase();
  assert.equal(cloakpipe(['init', '--home', join(tempDir(), 'a'), '--store', url, '--gate-id', 'gate-a']).status, 0);
  const home = join(tempDir(), 'b');
  const r = cloakpipe(['init', '--home', home, '--store', url, '--gate-id', 'gate-a']);
  assert.equal(r.status, 2, r.stderr);
  assert.match(r.stderr, /gate "gate-a" is already registered with another key: pick another --gate-id/);
  assert.equal(existsSync(home), false, 'no half-made home');
  const other = cloakpipe(['init', '--home', home, '--store', url, '--gate-id', 'gate-b']);
  assert.equal(other.status, 0, other.stderr);
});
