// Two keys of one process in one token (7ae5a8e): the second key's PIN is checked against the
// one the token took, also when both reconnect after the token was away (the first to reconnect
// logs in anew; the other finds it logged in). A PIN file changed to a wrong PIN meanwhile keeps
// that key refused, named, while the other signs. Real SoftHSM, the signers in this process.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { verify } from 'node:crypto';
import { freshToken, hsmSkip } from '../helpers/softhsm.js';
import { Pkcs11Signer, TokenError } from '../../src/keys/pkcs11.js';
import { parsePkcs11Uri } from '../../src/keys/uri.js';
import { SignerUnavailable } from '../../src/core/signer.js';

test('two keys in one token: a wrong second PIN is refused at open and at reconnect; right ones sign after the token came back', hsmSkip, () => {
  const t = freshToken();
  process.env.SOFTHSM2_CONF = t.env.SOFTHSM2_CONF;
  let alicePin = t.pin;
  const gate = Pkcs11Signer.open({ uri: parsePkcs11Uri(t.uri('gate')), pin: t.pin, create: true });
  const alice = Pkcs11Signer.open({ uri: parsePkcs11Uri(t.uri('alice')), pin: t.pin, rereadPin: () => alicePin, create: true });
  const signs = (s: Pkcs11Signer, what: string) => {
    const m = Buffer.from(`${what} ${Math.random()}`);
    assert.ok(verify(null, m, s.publicKey, s.sign(m)), what);
  };
  try {
    assert.throws(
      () => Pkcs11Signer.open({ uri: parsePkcs11Uri(t.uri('alice')), pin: 'wrong-4711' }),
      (e: unknown) => e instanceof TokenError && /is logged in already \(another key in it\) and this key's PIN is not the PIN it took: refused/.test(e.message) && !e.message.includes('wrong-4711'),
    );
    t.remove();
    assert.throws(() => gate.sign(Buffer.from('x')), SignerUnavailable);
    assert.throws(() => alice.sign(Buffer.from('x')), SignerUnavailable);
    t.restore();
    signs(gate, 'the gate key, back'); // logs in anew
    signs(alice, 'alice, back'); // finds the token logged in: her PIN is the one it took
    t.remove();
    assert.throws(() => gate.sign(Buffer.from('x')), SignerUnavailable);
    assert.throws(() => alice.sign(Buffer.from('x')), SignerUnavailable);
    t.restore();
    alicePin = 'wrong-4711';
    signs(gate, 'the gate key, back again');
    assert.throws(() => alice.sign(Buffer.from('x')), (e: unknown) => e instanceof SignerUnavailable && /not the PIN it took/.test(e.message));
    signs(gate, 'the gate key, beside a refused alice');
    alicePin = t.pin;
    signs(alice, 'alice, her PIN file right again');
  } finally {
    alice.close();
    gate.close();
  }
});
