// An init whose registration the fleet's store refuses leaves no key pair it generated in the
// token: the home it began is removed, and so is the pair. Left there, the retry (under another
// gate id) took it as a key already in the token and said it might be another home's. A pair
// another gate registered is never removed (one-key-two-homes covers that refusal). Real binary,
// real SoftHSM and PostgreSQL.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { cloakpipe, tempDir } from '../helpers/cli.js';
import { freshToken, hsmSkip, pkcs, straightToToken, type Token } from '../helpers/softhsm.js';
import { pgSkip } from '../store/postgres/pg.js';
import { freshDatabase, sql } from '../helpers/fleet.js';

const SHARED = /already in the token/;

/** How many key objects the token holds under the label `gate`, straight through SoftHSM. */
function pairs(t: Token): number {
  return straightToToken(t, t.pin, (p, session) => {
    p.C_FindObjectsInit(session, [{ type: pkcs.CKA_LABEL, value: 'gate' }]);
    try {
      return p.C_FindObjects(session, 16).length;
    } finally {
      p.C_FindObjectsFinal(session);
    }
  });
}

test('init --key: a registration refused (gate id taken) removes the pair it generated; the retry generates its own', { ...hsmSkip, ...pgSkip }, async () => {
  const t = freshToken();
  const env = { ...process.env, ...t.env, CLOAKPIPE_PKCS11_PIN: t.pin };
  const url = await freshDatabase();
  const taken = cloakpipe(['init', '--home', join(tempDir(), 'a'), '--store', url, '--gate-id', 'gate-a'], { env });
  assert.equal(taken.status, 0, taken.stderr);

  const refused = join(tempDir(), 'refused');
  const r = cloakpipe(['init', '--home', refused, '--store', url, '--gate-id', 'gate-a', '--key', t.uri()], { env });
  assert.equal(r.status, 2, r.stderr);
  assert.match(r.stderr, /gate "gate-a" is already registered with another key/);
  assert.equal(existsSync(refused), false, 'no half-made home is left');
  assert.equal(pairs(t), 0, 'the pair the refused init generated is left in the token');

  const again = cloakpipe(['init', '--home', join(tempDir(), 'b'), '--store', url, '--gate-id', 'gate-b', '--key', t.uri()], { env });
  assert.equal(again.status, 0, again.stderr);
  assert.doesNotMatch(again.stderr, SHARED, 'the retry took the refused init\'s pair for a key already there');
  assert.equal(pairs(t), 2, 'one pair, its two halves');
  assert.deepEqual((await sql(url, 'SELECT gate_id FROM cloakpipe.gates ORDER BY gate_id')).map((g) => g.gate_id), ['gate-a', 'gate-b']);
  assert.ok(!(r.stderr + again.stdout + again.stderr).includes(t.pin), 'the PIN is never printed');
});
