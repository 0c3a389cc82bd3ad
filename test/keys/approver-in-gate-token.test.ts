// An approver key in the gate key's token is refused at start. A token has one user PIN and the
// gate holds it: whatever runs as the gate (its host) can sign receipts with any key in that
// token and approve its own calls. So the gate (mcp-proxy) refuses an --approver-key whose pair
// its own login reaches, found by its public half in the token or by a private key there that
// signs for it, and the inbox refuses an approver key in the gate key's token, or in a token whose
// PIN is the gate key's; an approver key in a token of its own (its own PIN) is taken. Before,
// each started. Real binary, real SoftHSM.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { cloakpipe, tempDir, writeFiles, PERMIT_ALL } from '../helpers/cli.js';
import { freshToken, hsmSkip, pkcs, straightToToken, type Token } from '../helpers/softhsm.js';
import { startInbox } from '../helpers/inbox-server.js';

const files = writeFiles({ 'm.yaml': 'version: 1\nrelease: approver@1\ntools: {}\n', 'p.cedar': PERMIT_ALL });
const REFUSED = /cannot start: approver key .* is a key in the gate key's token "cloakpipe", which the gate logs in to: .*keep approver keys in a token of their own/;

/** A home whose gate key is in `t`; the environment every child of the test uses. */
function tokenHome(t: Token) {
  process.env.SOFTHSM2_CONF = t.env.SOFTHSM2_CONF;
  delete process.env.CLOAKPIPE_PKCS11_PIN;
  const home = join(tempDir(), 'home');
  const r = cloakpipe(['init', '--home', home, '--key', t.uri('gate'), '--pin-file', t.pinFile]);
  assert.equal(r.status, 0, r.stderr);
  return home;
}

/** An approver pair made in `t` under `object` (keygen --key); its public key file. */
function approverIn(t: Token, object: string): string {
  const prefix = join(tempDir(), object);
  const r = cloakpipe(['keygen', '--key', t.uri(object), '--pin-file', t.pinFile, '--out', prefix]);
  assert.equal(r.status, 0, r.stderr);
  return `${prefix}.pub`;
}

/** mcp-proxy on `home` with its token's PIN file; whether it spawned the upstream. */
function gate(home: string, t: Token, approverPub: string) {
  const marker = join(tempDir(), 'spawned');
  const r = cloakpipe(
    ['mcp-proxy', '--home', home, '--pin-file', t.pinFile, '--manifest', files['m.yaml'], '--policy', files['p.cedar'], '--approver-key', approverPub, '--', 'sh', '-c', 'touch "$0"; cat >/dev/null', marker],
    { input: '' },
  );
  return { ...r, spawned: existsSync(marker) };
}

test('mcp-proxy: an --approver-key whose pair is in the gate key\'s token is exit 2, named, nothing spawned; one in its own token starts', hsmSkip, () => {
  const t = freshToken();
  const home = tokenHome(t);
  const bob = approverIn(t, 'bob');
  const r = gate(home, t, bob);
  assert.equal(r.status, 2, r.stderr);
  assert.match(r.stderr, REFUSED);
  assert.equal(r.spawned, false);
  assert.ok(!r.stderr.includes(t.pin), 'the PIN is never printed');

  // Only the private half left in the token: found by what it signs.
  straightToToken(t, t.pin, (p, session) => {
    p.C_FindObjectsInit(session, [{ type: pkcs.CKA_CLASS, value: pkcs.CKO_PUBLIC_KEY }, { type: pkcs.CKA_LABEL, value: 'bob' }]);
    const pubs = p.C_FindObjects(session, 4);
    p.C_FindObjectsFinal(session);
    assert.equal(pubs.length, 1);
    p.C_DestroyObject(session, pubs[0]);
  });
  const alone = gate(home, t, bob);
  assert.equal(alone.status, 2, alone.stderr);
  assert.match(alone.stderr, REFUSED);
  assert.equal(alone.spawned, false);

  const other = freshToken('alice', t);
  const alice = approverIn(other, 'alice');
  const ok = gate(home, t, alice);
  assert.equal(ok.status, 0, ok.stderr);
  assert.equal(ok.spawned, true);
});

test('inbox serve: an approver key in the gate key\'s token is exit 2, named; one in a token of its own serves', hsmSkip, async () => {
  const t = freshToken();
  const home = tokenHome(t);
  approverIn(t, 'bob');
  const r = cloakpipe(['inbox', 'serve', '--home', home, '--pin-file', t.pinFile, '--approver-key', t.uri('bob'), '--approver-pin-file', t.pinFile, '--listen', '127.0.0.1:0']);
  assert.equal(r.status, 2, r.stderr);
  assert.match(r.stderr, /cannot start: --approver-key pkcs11:.* is a key in the gate key's token "cloakpipe", which the gate logs in to/);
  assert.ok(!r.stderr.includes(t.pin), 'the PIN is never printed');

  const other = freshToken('alice', t);
  approverIn(other, 'alice');
  const inbox = await startInbox({ home, approverKey: other.uri('alice'), flags: ['--pin-file', t.pinFile, '--approver-pin-file', other.pinFile] });
  try {
    assert.match(inbox.stderr(), /serving http/);
  } finally {
    await inbox.stop();
  }
});

test('inbox serve: an approver key in another token whose PIN is the gate key\'s is exit 2, named', hsmSkip, () => {
  const t = freshToken();
  const home = tokenHome(t);
  const same = freshToken('alice', t, t.pin);
  approverIn(same, 'alice');
  const r = cloakpipe(['inbox', 'serve', '--home', home, '--pin-file', t.pinFile, '--approver-key', same.uri('alice'), '--approver-pin-file', same.pinFile, '--listen', '127.0.0.1:0']);
  assert.equal(r.status, 2, r.stderr);
  assert.match(r.stderr, /cannot start: --approver-key pkcs11:.* is in token "alice", whose PIN is the gate key's: .*keep approver keys in a token of their own/);
  assert.doesNotMatch(r.stderr, /serving/);
  assert.ok(!r.stderr.includes(t.pin), 'the PIN is never printed');
});
