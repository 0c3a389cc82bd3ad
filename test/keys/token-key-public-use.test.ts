// A private key made by another tool with CKA_PRIVATE false is usable in any session without the
// PIN: whoever reaches the token signs as the gate. init --key (and every command opening the
// key) refuses it, exit 2, named. The real binary and a real SoftHSM token; that the key signs
// without a login is shown straight through SoftHSM first.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { cloakpipe, tempDir } from '../helpers/cli.js';
import { freshToken, hsmSkip, pkcs, SOFTHSM_MODULE, straightToToken } from '../helpers/softhsm.js';

test('a token key usable without logging in (CKA_PRIVATE false) is refused, exit 2, named', hsmSkip, () => {
  const t = freshToken();
  straightToToken(t, t.pin, (p, session) => {
    const label = { type: pkcs.CKA_LABEL, value: 'gate' };
    p.C_GenerateKeyPair(
      session,
      { mechanism: 0x1055 }, // CKM_EC_EDWARDS_KEY_PAIR_GEN
      [{ type: pkcs.CKA_TOKEN, value: true }, label, { type: pkcs.CKA_VERIFY, value: true }, { type: pkcs.CKA_EC_PARAMS, value: Buffer.from('06032b6570', 'hex') }],
      [{ type: pkcs.CKA_TOKEN, value: true }, label, { type: pkcs.CKA_PRIVATE, value: false }, { type: pkcs.CKA_SIGN, value: true }, { type: pkcs.CKA_SENSITIVE, value: true }, { type: pkcs.CKA_EXTRACTABLE, value: false }],
    );
  });
  // Without a login, another process finds the key and signs with it.
  process.env.SOFTHSM2_CONF = t.env.SOFTHSM2_CONF;
  const p = new pkcs.PKCS11();
  p.load(SOFTHSM_MODULE);
  p.C_Initialize();
  try {
    const slot = p.C_GetSlotList(true).find((s) => p.C_GetTokenInfo(s).label.trim() === t.label)!;
    const session = p.C_OpenSession(slot, pkcs.CKF_SERIAL_SESSION);
    p.C_FindObjectsInit(session, [{ type: pkcs.CKA_CLASS, value: pkcs.CKO_PRIVATE_KEY }, { type: pkcs.CKA_LABEL, value: 'gate' }]);
    const [key] = p.C_FindObjects(session, 2);
    p.C_FindObjectsFinal(session);
    assert.ok(key, 'found without a login');
    p.C_SignInit(session, { mechanism: 0x1057 }, key); // CKM_EDDSA
    assert.equal(p.C_Sign(session, Buffer.from('forged'), Buffer.alloc(64)).length, 64, 'signed without a login');
  } finally {
    p.C_Finalize();
  }
  const r = cloakpipe(['init', '--home', join(tempDir(), 'home'), '--key', t.uri(), '--pin-file', t.pinFile], { env: { ...process.env, ...t.env } });
  assert.equal(r.status, 2, r.stderr);
  assert.match(r.stderr, /can be used without logging in \(CKA_PRIVATE false\): refused/);
  assert.ok(!(r.stdout + r.stderr).includes(t.pin));
});
