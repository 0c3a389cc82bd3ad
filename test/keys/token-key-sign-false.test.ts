// A token key whose private half may not sign (CKA_SIGN false, made by another tool for another
// use) is refused at start, exit 2, named by its attribute. The real binary and a real SoftHSM token.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { cloakpipe, tempDir } from '../helpers/cli.js';
import { freshToken, hsmSkip, pairMadeElsewhere } from '../helpers/softhsm.js';

test('a token key that may not sign (CKA_SIGN false) is refused, exit 2, named', hsmSkip, () => {
  const t = freshToken();
  pairMadeElsewhere(t, { sign: false });
  const r = cloakpipe(['init', '--home', join(tempDir(), 'home'), '--key', t.uri(), '--pin-file', t.pinFile], { env: { ...process.env, ...t.env } });
  assert.equal(r.status, 2, r.stderr);
  assert.match(r.stderr, /the key object="gate" in token "cloakpipe" may not sign \(CKA_SIGN false\)/);
  assert.ok(!(r.stdout + r.stderr).includes(t.pin));
});
