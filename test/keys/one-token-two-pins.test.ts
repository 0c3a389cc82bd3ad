// The approver key and the gate key in one token, each with its own PIN file (inbox serve). A
// token has one user login per process: the second key's C_Login answers "already logged in",
// which proves nothing about its PIN. Each key's PIN must be the token's all the same, whichever
// is opened second; before, a wrong PIN for the second key started the inbox and signed anyway.
// Right PINs do not serve either: an approver key in the gate key's token is refused
// (approver-in-gate-token.test.ts). The real binary and a real SoftHSM token.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cloakpipe, tempDir } from '../helpers/cli.js';
import { freshToken, hsmSkip } from '../helpers/softhsm.js';

test('one token, two keys: a wrong PIN for either is exit 2, named, whichever is opened second; right PINs meet the one-token refusal', hsmSkip, () => {
  const t = freshToken();
  const env = { ...process.env, ...t.env };
  delete env.CLOAKPIPE_PKCS11_PIN;
  const home = join(tempDir(), 'home');
  assert.equal(cloakpipe(['init', '--home', home, '--key', t.uri('gate'), '--pin-file', t.pinFile], { env }).status, 0);
  const prefix = join(tempDir(), 'alice');
  const kg = cloakpipe(['keygen', '--key', t.uri('alice'), '--pin-file', t.pinFile, '--out', prefix], { env });
  assert.equal(kg.status, 0, kg.stderr);
  const wrongPin = join(tempDir(), 'wrong-pin');
  writeFileSync(wrongPin, 'wrong-4711\n', { mode: 0o600 });
  const serve = (approverPin: string, gatePin: string, extra: Record<string, string> = {}) =>
    cloakpipe(['inbox', 'serve', '--home', home, '--listen', '127.0.0.1:0', '--approver-key', t.uri('alice'), '--approver-pin-file', approverPin, '--key', t.uri('gate'), '--pin-file', gatePin], {
      env: { ...env, ...extra },
      timeout: 20_000,
    });
  for (const [name, r, why] of [
    // The approver key is opened first: its login is the token's; the gate key's is second.
    ['a wrong approver PIN', serve(wrongPin, t.pinFile), /approver key: token "cloakpipe" refused the PIN \(CKR_PIN_INCORRECT\)/],
    ['a wrong gate key PIN', serve(t.pinFile, wrongPin), /gate key: token "cloakpipe" is logged in already \(another key in it\) and this key's PIN is not the PIN it took: refused/],
  ] as const) {
    assert.equal(r.status, 2, `${name}: ${r.stderr}`);
    assert.match(r.stderr, why, name);
    assert.doesNotMatch(r.stderr, /serving/, `${name}: nothing listens`);
    for (const pin of [t.pin, 'wrong-4711']) assert.ok(!(r.stdout + r.stderr).includes(pin), `${name}: no PIN printed`);
  }
  const right = serve(t.pinFile, t.pinFile);
  assert.equal(right.status, 2, right.stderr);
  assert.match(right.stderr, /is a key in the gate key's token "cloakpipe", which the gate logs in to/);
});
