// A token key made with CKA_ALWAYS_AUTHENTICATE asks the PIN again before each signature (a
// context-specific login after every C_SignInit): a gate signing every entry cannot sign with it.
// init --key (and every command opening the key) refuses it, exit 2, and says which attribute the
// key must not have. Before, 'the PKCS#11 module … failed (CKR_USER_NOT_LOGGED_IN)', which named
// nothing the user could change. The real binary and a real SoftHSM token.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { cloakpipe, tempDir } from '../helpers/cli.js';
import { freshToken, hsmSkip, pairMadeElsewhere } from '../helpers/softhsm.js';

test('a token key that asks the PIN at each signature (CKA_ALWAYS_AUTHENTICATE) is refused, exit 2, named', hsmSkip, () => {
  const t = freshToken();
  pairMadeElsewhere(t, { alwaysAuthenticate: true });
  const r = cloakpipe(['init', '--home', join(tempDir(), 'home'), '--key', t.uri(), '--pin-file', t.pinFile], { env: { ...process.env, ...t.env } });
  assert.equal(r.status, 2, r.stderr);
  assert.match(r.stderr, /the key object="gate" in token "cloakpipe" asks the PIN at each signature \(CKA_ALWAYS_AUTHENTICATE true\): the gate signs every entry; make the key without it/);
  assert.ok(!(r.stdout + r.stderr).includes(t.pin));
});
