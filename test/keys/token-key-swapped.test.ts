// Another tool replaces the gate's private key in the token under its label, leaving the public
// key object as it was, while the gate runs. The gate's next signature fails (its key handle is
// gone) and it reconnects: the public key it finds is the one it opened, but the private key is
// not its pair. Before, signing resumed with it: calls were forwarded and their entries signed by
// a key that `verify` refuses. Now the reconnect signs a probe and checks it with the opened
// public key: every call is refused fail_closed, nothing is forwarded, the ledger still verifies.
// The real binary, the official SDK client, server-memory, a real SoftHSM token changed straight
// through SoftHSM.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { MEMORY, PERMIT_ALL, cloakpipe, tempDir, writeFiles } from '../helpers/cli.js';
import { call, startGate, summary } from '../helpers/gate.js';
import { freshToken, hsmSkip, pkcs, straightToToken } from '../helpers/softhsm.js';

const MANIFEST = 'version: 1\nrelease: swapped@1\ntools:\n  create_entities:\n    effect: write\n    arguments:\n      entities: { type: array, max_items: 5, required: true, items: { type: object } }\n';
const entity = (name: string) => ({ entities: [{ name, entityType: 'note', observations: [] }] });

test('a private key replaced in the token under the gate key label: the gate never signs with it', hsmSkip, async () => {
  const t = freshToken();
  const env = { ...process.env, ...t.env, CLOAKPIPE_PKCS11_PIN: undefined };
  const home = join(tempDir(), 'home');
  const init = cloakpipe(['init', '--home', home, '--key', t.uri(), '--pin-file', t.pinFile], { env });
  assert.equal(init.status, 0, init.stderr);
  const memory = join(tempDir(), 'memory.jsonl');
  const f = writeFiles({ 'm.yaml': MANIFEST, 'p.cedar': PERMIT_ALL });
  const g = await startGate({ home, manifest: f['m.yaml'], policy: f['p.cedar'], flags: ['--pin-file', t.pinFile], upstream: [process.execPath, MEMORY], env: { ...t.env, MEMORY_FILE_PATH: memory } });
  try {
    assert.equal(summary(await call(g, 'create_entities', entity('before'))), 'ok');
    straightToToken(t, t.pin, (p, session) => {
      p.C_FindObjectsInit(session, [{ type: pkcs.CKA_CLASS, value: pkcs.CKO_PRIVATE_KEY }, { type: pkcs.CKA_LABEL, value: 'gate' }]);
      const [old] = p.C_FindObjects(session, 4);
      p.C_FindObjectsFinal(session);
      p.C_DestroyObject(session, old);
      p.C_GenerateKeyPair(
        session,
        { mechanism: 0x1055 }, // CKM_EC_EDWARDS_KEY_PAIR_GEN: a new Ed25519 pair, its private half labelled as the gate's
        [{ type: pkcs.CKA_TOKEN, value: true }, { type: pkcs.CKA_LABEL, value: 'elsewhere' }, { type: pkcs.CKA_EC_PARAMS, value: Buffer.from('06032b6570', 'hex') }],
        [{ type: pkcs.CKA_TOKEN, value: true }, { type: pkcs.CKA_LABEL, value: 'gate' }, { type: pkcs.CKA_PRIVATE, value: true }, { type: pkcs.CKA_SIGN, value: true }, { type: pkcs.CKA_SENSITIVE, value: true }, { type: pkcs.CKA_EXTRACTABLE, value: false }],
      );
    });
    for (const name of ['after1', 'after2', 'after3']) assert.match(summary(await call(g, 'create_entities', entity(name), undefined, 60_000)), /^fail_closed/, name);
    assert.match(g.stderr(), /now holds another private key than the one opened: it does not sign for the opened public key/);
    assert.ok(!readFileSync(memory, 'utf8').includes('after'), 'nothing reached the server once the key was replaced');
  } finally {
    await g.close();
  }
  const v = cloakpipe(['verify', '--home', home], { env });
  assert.equal(v.status, 0, v.stdout + v.stderr);
});
