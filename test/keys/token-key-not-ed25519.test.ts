// A token whose key under the URI's name is an RSA or a NIST-curve EC key, made by another tool:
// init --key refuses it, exit 2, named by its type, and generates nothing beside it. Before, the
// search asked for Edwards-curve keys only, so init found "none" and generated an Ed25519 pair
// under the same label (the token then held two keys named gate), and every other command said
// the token holds no key, 'init --key … creates one'. The real binary and a real SoftHSM token.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { cloakpipe, tempDir } from '../helpers/cli.js';
import { freshToken, hsmSkip, pkcs, straightToToken, type Token } from '../helpers/softhsm.js';

const label = { type: pkcs.CKA_LABEL, value: 'gate' };
const privateHalf = [label, { type: pkcs.CKA_TOKEN, value: true }, { type: pkcs.CKA_PRIVATE, value: true }, { type: pkcs.CKA_SIGN, value: true }, { type: pkcs.CKA_SENSITIVE, value: true }, { type: pkcs.CKA_EXTRACTABLE, value: false }];

function privateKeysNamedGate(t: Token): number {
  return straightToToken(t, t.pin, (p, session) => {
    p.C_FindObjectsInit(session, [{ type: pkcs.CKA_CLASS, value: pkcs.CKO_PRIVATE_KEY }, label]);
    const n = p.C_FindObjects(session, 16).length;
    p.C_FindObjectsFinal(session);
    return n;
  });
}

test('an RSA or P-256 key under the name: init refuses it by its type, exit 2, and generates nothing beside it', hsmSkip, () => {
  const kinds: [string, (p: import('pkcs11js').PKCS11, s: Buffer) => void, RegExp][] = [
    [
      'RSA',
      (p, s) =>
        p.C_GenerateKeyPair(s, { mechanism: pkcs.CKM_RSA_PKCS_KEY_PAIR_GEN }, [label, { type: pkcs.CKA_TOKEN, value: true }, { type: pkcs.CKA_MODULUS_BITS, value: 2048 }, { type: pkcs.CKA_PUBLIC_EXPONENT, value: Buffer.from([1, 0, 1]) }], privateHalf),
      /the key object="gate" in token "cloakpipe" is an RSA key \(CKK_RSA\), not Ed25519: the gate signs Ed25519 only/,
    ],
    [
      'P-256',
      (p, s) => p.C_GenerateKeyPair(s, { mechanism: pkcs.CKM_EC_KEY_PAIR_GEN }, [label, { type: pkcs.CKA_TOKEN, value: true }, { type: pkcs.CKA_EC_PARAMS, value: Buffer.from('06082a8648ce3d030107', 'hex') }], privateHalf),
      /the key object="gate" in token "cloakpipe" is an EC \(ECDSA\) key \(CKK_EC\), not Ed25519: the gate signs Ed25519 only/,
    ],
  ];
  for (const [kind, make, why] of kinds) {
    const t = freshToken();
    straightToToken(t, t.pin, make);
    const r = cloakpipe(['init', '--home', join(tempDir(), 'home'), '--key', t.uri(), '--pin-file', t.pinFile], { env: { ...process.env, ...t.env } });
    assert.equal(r.status, 2, `${kind}: ${r.stderr}`);
    assert.match(r.stderr, why, kind);
    assert.equal(privateKeysNamedGate(t), 1, `${kind}: no Ed25519 pair generated beside it`);
    assert.ok(!(r.stdout + r.stderr).includes(t.pin));
  }
});
