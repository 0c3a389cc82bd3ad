// A private key made by another tool with CKA_PRIVATE false is usable in any session without the
// PIN: whoever reaches the token signs as the gate. init --key (and every command opening the
// key) refuses it, exit 2, named. The real binary and a real SoftHSM token; that the key signs
// without a login is shown straight through SoftHSM first.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { cloakpipe, tempDir } from '../helpers/cli.js';
import { freshToken, hsmSkip, pairMadeElsewhere, pkcs, straightToToken } from '../helpers/softhsm.js';

test('a token key usable without logging in (CKA_PRIVATE false) is refused, exit 2, named', hsmSkip, () => {
  const t = freshToken();
  pairMadeElsewhere(t, { verify: true, loginFree: true });
  // Without a login, another process finds the key and signs with it.
  straightToToken(t, null, (p, session) => {
    p.C_FindObjectsInit(session, [{ type: pkcs.CKA_CLASS, value: pkcs.CKO_PRIVATE_KEY }, { type: pkcs.CKA_LABEL, value: 'gate' }]);
    const [key] = p.C_FindObjects(session, 2);
    p.C_FindObjectsFinal(session);
    assert.ok(key, 'found without a login');
    p.C_SignInit(session, { mechanism: 0x1057 }, key); // CKM_EDDSA
    assert.equal(p.C_Sign(session, Buffer.from('forged'), Buffer.alloc(64)).length, 64, 'signed without a login');
  });
  const r = cloakpipe(['init', '--home', join(tempDir(), 'home'), '--key', t.uri(), '--pin-file', t.pinFile], { env: { ...process.env, ...t.env } });
  assert.equal(r.status, 2, r.stderr);
  assert.match(r.stderr, /can be used without logging in \(CKA_PRIVATE false\): refused/);
  assert.ok(!(r.stdout + r.stderr).includes(t.pin));
});
