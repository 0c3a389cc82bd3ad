// An Ed448 key is CKK_EC_EDWARDS too: a token whose key under the URI's label is Ed448 is refused
// as a key of another curve, named, not as "an Ed25519 public key of an unexpected form" (what
// init and the gate said before, pointing at the token's encoding instead of the key). The real
// binary and a real SoftHSM token, the Ed448 pair generated in it with the PIN.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { cloakpipe, tempDir } from '../helpers/cli.js';
import { freshToken, hsmSkip, pairMadeElsewhere } from '../helpers/softhsm.js';

test('an Ed448 key in the token under the label: init refuses it as another curve, exit 2, no PIN printed', hsmSkip, () => {
  const t = freshToken();
  pairMadeElsewhere(t, { curve: 'ed448' });
  const r = cloakpipe(['init', '--home', join(tempDir(), 'home'), '--key', t.uri(), '--pin-file', t.pinFile], { env: { ...process.env, ...t.env } });
  assert.equal(r.status, 2, r.stderr);
  assert.match(r.stderr, /is an Edwards-curve key of another curve than Ed25519/);
  assert.ok(!(r.stdout + r.stderr).includes(t.pin));
});
