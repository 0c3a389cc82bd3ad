// A token holding a public key under the name but no private key (its private half deleted, or
// only the public key imported by another tool). init --key generated a pair beside it, then saw
// two public keys under the name and took that for a second init racing it: 'another key pair
// was created … at the same time: run the command again', and the same again at every run. Now
// it says what is there, exit 2, and generates nothing. The real binary and a real SoftHSM token.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { cloakpipe, tempDir } from '../helpers/cli.js';
import { freshToken, hsmSkip, pairMadeElsewhere, pkcs, straightToToken } from '../helpers/softhsm.js';

test('a public key under the name without its private key: init says so, exit 2, and the token keeps only it', hsmSkip, () => {
  const t = freshToken();
  pairMadeElsewhere(t, { verify: true });
  const found = (p: import('pkcs11js').PKCS11, session: Buffer, cls: number) => {
    p.C_FindObjectsInit(session, [{ type: pkcs.CKA_CLASS, value: cls }, { type: pkcs.CKA_LABEL, value: 'gate' }]);
    const hits = p.C_FindObjects(session, 16);
    p.C_FindObjectsFinal(session);
    return hits;
  };
  const count = (cls: number) => straightToToken(t, t.pin, (p, session) => found(p, session, cls));
  straightToToken(t, t.pin, (p, session) => p.C_DestroyObject(session, found(p, session, pkcs.CKO_PRIVATE_KEY)[0]));
  for (let run = 0; run < 2; run++) {
    const r = cloakpipe(['init', '--home', join(tempDir(), 'home'), '--key', t.uri(), '--pin-file', t.pinFile], { env: { ...process.env, ...t.env } });
    assert.equal(r.status, 2, r.stderr);
    assert.match(r.stderr, /token "cloakpipe" holds a public key object="gate" without its private key: remove it, or name another object=/);
    assert.doesNotMatch(r.stderr, /at the same time/);
  }
  assert.equal(count(pkcs.CKO_PRIVATE_KEY).length, 0);
  assert.equal(count(pkcs.CKO_PUBLIC_KEY).length, 1);
});
