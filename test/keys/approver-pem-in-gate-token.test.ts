// An approver key given to the inbox as a PEM file whose pair was also imported into the gate
// key's token is refused at start, as one named by its pkcs11: URI is: the gate's host, which holds
// the token's PIN, could sign approvals of the gate's own calls with the copy in the token. Before,
// the inbox looked the key up only by id among the token keys it had opened, found none for a
// PEM key, and served. Real binary, real SoftHSM, the key imported as an operator's tool does.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createPrivateKey } from 'node:crypto';
import { join } from 'node:path';
import { cloakpipe, tempDir } from '../helpers/cli.js';
import { freshToken, hsmSkip, importEd25519 } from '../helpers/softhsm.js';

const REFUSED = /cannot start: --approver-key .*alice\.key is a key in the gate key's token "cloakpipe", which the gate logs in to/;

for (const halves of [{ public: true }, { private: true }] as const) {
  const which = halves.public ? 'its public half' : 'its private half';
  test(`inbox serve: a PEM approver key with ${which} imported into the gate key's token is exit 2, named`, hsmSkip, () => {
    const t = freshToken();
    const env = { ...process.env, ...t.env, CLOAKPIPE_PKCS11_PIN: undefined };
    const home = join(tempDir(), 'home');
    const init = cloakpipe(['init', '--home', home, '--key', t.uri('gate'), '--pin-file', t.pinFile], { env });
    assert.equal(init.status, 0, init.stderr);
    const prefix = join(tempDir(), 'alice');
    assert.equal(cloakpipe(['keygen', '--out', prefix]).status, 0);
    const serve = () =>
      cloakpipe(['inbox', 'serve', '--home', home, '--pin-file', t.pinFile, '--approver-key', `${prefix}.key`, '--listen', '127.0.0.1:0'], { env, timeout: 15_000 });

    // Not in the token: it serves (killed at the bound).
    const alone = serve();
    assert.match(alone.stderr, /serving http/, alone.stderr);

    importEd25519(t, createPrivateKey(readFileSync(`${prefix}.key`)), 'alice', halves);
    const r = serve();
    assert.equal(r.status, 2, r.stderr);
    assert.match(r.stderr, REFUSED);
    assert.doesNotMatch(r.stderr, /serving/);
    assert.ok(!r.stderr.includes(t.pin), 'the PIN is never printed');
  });
}
