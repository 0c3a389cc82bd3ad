// Whether an approver key is in the gate key's token (ADR 107) is asked of the token: a private
// key there that signs for the approver's public key is one the gate's login reaches. A token
// that never answers that signature has not said the key is elsewhere: the gate does not start,
// named, nothing spawned. Before, the unanswered probe counted as a key that cannot sign, and the
// gate started with an approver key its own host could sign with. Real binary, real SoftHSM behind
// hanging-token.c holding C_Sign with the approver's key only.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { cloakpipe, PERMIT_ALL, tempDir, writeFiles } from '../helpers/cli.js';
import { hsmSkip, pkcs, straightToToken } from '../helpers/softhsm.js';
import { homeOnHangingToken, runFor } from '../helpers/hanging-token.js';

test('mcp-proxy: the token never answers the probe of an approver key in it: exit, named, nothing spawned', hsmSkip, async (t: TestContext) => {
  const { tok, env, home } = homeOnHangingToken(t);
  // bob's pair made in the gate's token, then its public half removed: only a signature finds it.
  const prefix = join(tempDir(), 'bob');
  const kg = cloakpipe(['keygen', '--key', tok.uri('bob'), '--pin-file', tok.pinFile, '--out', prefix], { env });
  assert.equal(kg.status, 0, kg.stderr);
  straightToToken(tok, tok.pin, (p, session) => {
    p.C_FindObjectsInit(session, [{ type: pkcs.CKA_CLASS, value: pkcs.CKO_PUBLIC_KEY }, { type: pkcs.CKA_LABEL, value: 'bob' }]);
    const pubs = p.C_FindObjects(session, 4);
    p.C_FindObjectsFinal(session);
    assert.equal(pubs.length, 1);
    p.C_DestroyObject(session, pubs[0]);
  });
  tok.holdKey('bob');
  t.after(() => tok.holdKey(null));
  const marker = join(tempDir(), 'spawned');
  const f = writeFiles({ 'm.yaml': 'version: 1\nrelease: probe@1\ntools: {}\n', 'p.cedar': PERMIT_ALL });
  const args = ['mcp-proxy', '--home', home, '--pin-file', tok.pinFile, '--manifest', f['m.yaml'], '--policy', f['p.cedar'], '--approver-key', `${prefix}.pub`, '--', 'sh', '-c', 'touch "$0"; cat >/dev/null', marker];
  const r = await runFor(args, env, 60_000);
  assert.ok(r, 'still running 60 s after the token stopped answering');
  assert.ok(!existsSync(marker), `the upstream was spawned:\n${r.stderr}`);
  assert.notEqual(r.code, 0, r.stderr);
  assert.match(r.stderr, /cannot start: approver key .*bob\.pub: cannot tell whether it is a key in the gate key's token, which the gate logs in to: token "cloakpipe" gave no answer \(.*did not answer C_Sign within 5 s\); not started/);
  assert.ok(!r.stderr.includes(tok.pin), 'the PIN is not printed');
});
