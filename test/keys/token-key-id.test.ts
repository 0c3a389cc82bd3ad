// Other PKCS#11 tools pair a private key with its public key by CKA_ID: the pair `init --key`
// generates carries one id on both halves, derived from the public key (SHA-1 of it, RFC 5280's
// key identifier). A pair another tool made without any id still opens. The real binary and a
// real SoftHSM token, read straight through SoftHSM.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, createPublicKey } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { cloakpipe, tempDir } from '../helpers/cli.js';
import { freshToken, hsmSkip, pairMadeElsewhere, pkcs, straightToToken, type Token } from '../helpers/softhsm.js';

/** CKA_ID of every object labelled `label`, by class. */
function idsOf(t: Token, label: string): { priv: Buffer[]; pub: Buffer[] } {
  return straightToToken(t, t.pin, (p, session) => {
    const ids = (cls: number) => {
      p.C_FindObjectsInit(session, [{ type: pkcs.CKA_CLASS, value: cls }, { type: pkcs.CKA_LABEL, value: label }]);
      const found = p.C_FindObjects(session, 10);
      p.C_FindObjectsFinal(session);
      return found.map((h) => p.C_GetAttributeValue(session, h, [{ type: pkcs.CKA_ID }])[0].value as Buffer);
    };
    return { priv: ids(pkcs.CKO_PRIVATE_KEY), pub: ids(pkcs.CKO_PUBLIC_KEY) };
  });
}

test('init --key: the generated pair has one CKA_ID on both halves, the public key identifier', hsmSkip, () => {
  const t = freshToken();
  const home = join(tempDir(), 'home');
  const r = cloakpipe(['init', '--home', home, '--key', t.uri(), '--pin-file', t.pinFile], { env: { ...process.env, ...t.env } });
  assert.equal(r.status, 0, r.stderr);
  const raw = createPublicKey(readFileSync(join(home, 'gate.pub'))).export({ format: 'der', type: 'spki' }).subarray(12);
  const want = createHash('sha1').update(raw).digest('hex');
  const { priv, pub } = idsOf(t, 'gate');
  assert.deepEqual(
    [priv.map((b) => b.toString('hex')), pub.map((b) => b.toString('hex'))],
    [[want], [want]],
    'one private and one public key, each with the id of the public key',
  );
});

test('a pair made by another tool without CKA_ID still opens; its objects are left as they were', hsmSkip, () => {
  const t = freshToken();
  pairMadeElsewhere(t, { verify: true });
  const home = join(tempDir(), 'home');
  const env = { ...process.env, ...t.env };
  // init opens the key, signs with it and verifies the signature with its public key.
  const r = cloakpipe(['init', '--home', home, '--key', t.uri(), '--pin-file', t.pinFile], { env });
  assert.equal(r.status, 0, r.stderr);
  const { priv, pub } = idsOf(t, 'gate');
  assert.deepEqual([priv.length, pub.length, priv[0].length, pub[0].length], [1, 1, 0, 0], 'the same two objects, still without an id');
});
