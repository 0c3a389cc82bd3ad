// A token that answers C_Sign, but not with a signature of the gate key (a fault, a failover to
// an HSM holding another key under the same handle; hanging-token.c flips a bit of every
// signature on demand): each signature is checked with the gate's public key before anything is
// committed, so the call is refused fail_closed, nothing reaches the server, and the ledger
// verifies; once the token signs right again, calls pass. The real binary, the official SDK
// client, server-memory and a real SoftHSM token.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { cloakpipe } from '../helpers/cli.js';
import { call, startGate, summary } from '../helpers/gate.js';
import { hsmSkip } from '../helpers/softhsm.js';
import { entity, homeOnHangingToken, memoryGate } from '../helpers/hanging-token.js';

test('a token whose signatures do not verify: every call refused fail_closed, nothing forwarded, the ledger verifies', hsmSkip, async (t: TestContext) => {
  const { tok, env, home } = homeOnHangingToken(t, 'corrupt');
  const { memory, options } = memoryGate(tok, home, 'wrong-sig@1');
  const g = await startGate(options);
  try {
    assert.equal(summary(await call(g, 'create_entities', entity('before'))), 'ok');
    tok.hold('corrupt');
    for (const name of ['wrong1', 'wrong2']) assert.match(summary(await call(g, 'create_entities', entity(name), undefined, 60_000)), /^fail_closed/, name);
    assert.ok(!readFileSync(memory, 'utf8').includes('wrong'), 'nothing reached the server while the token signed wrong');
    assert.match(g.stderr(), /does not verify with the gate key/);
    tok.answer('corrupt');
    let after = '';
    for (let i = 0; i < 5 && after !== 'ok'; i++) after = summary(await call(g, 'create_entities', entity(`after${i}`), undefined, 60_000));
    assert.equal(after, 'ok', g.stderr());
  } finally {
    await g.close();
  }
  const v = cloakpipe(['verify', '--home', home], { env });
  assert.equal(v.status, 0, v.stdout + v.stderr);
});
