// The gate key is never an approver key. With it as --approver-key, whatever can sign the ledger
// (the gate's host, the process logged in to its token) could also sign the receipts that approve
// the gate's own calls: an approval would be no one else's word. keygen --key over a token that
// already holds the gate key under that name hands out the gate key's public half as an
// approver's. Before, the gate and the inbox started with it. The real binary, a real SoftHSM token.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { cloakpipe, makeHome, tempDir, writeFiles, PERMIT_ALL } from '../helpers/cli.js';
import { freshToken, hsmSkip } from '../helpers/softhsm.js';

const files = writeFiles({ 'm.yaml': 'version: 1\nrelease: approver@1\ntools: {}\n', 'p.cedar': PERMIT_ALL });

/** mcp-proxy on `home` with `flags`; whether it spawned the upstream. */
function gate(home: string, flags: string[], env: NodeJS.ProcessEnv = process.env) {
  const marker = join(tempDir(), 'spawned');
  const r = cloakpipe(['mcp-proxy', '--home', home, '--manifest', files['m.yaml'], '--policy', files['p.cedar'], ...flags, '--', 'sh', '-c', 'touch "$0"; cat >/dev/null', marker], { input: '', env });
  return { ...r, spawned: existsSync(marker) };
}

test('a file gate key as --approver-key: mcp-proxy and inbox serve exit 2, named; another key starts', () => {
  const home = makeHome();
  const own = gate(home, ['--approver-key', join(home, 'gate.pub')]);
  assert.equal(own.status, 2, own.stderr);
  assert.match(own.stderr, /cannot start: approver key .*gate\.pub is the gate key itself/);
  assert.equal(own.spawned, false);
  // The inbox signs receipts with its approver key: the home's gate.key is refused there too.
  const inbox = cloakpipe(['inbox', 'serve', '--home', home, '--approver-key', join(home, 'gate.key'), '--listen', '127.0.0.1:0']);
  assert.equal(inbox.status, 2, inbox.stderr);
  assert.match(inbox.stderr, /--approver-key .*gate\.key is the gate key itself/);
  const alice = join(tempDir(), 'alice');
  assert.equal(cloakpipe(['keygen', '--out', alice]).status, 0);
  const other = gate(home, ['--approver-key', `${alice}.pub`]);
  assert.equal(other.status, 0, other.stderr);
  assert.equal(other.spawned, true);
});

test('keygen --key over the token object that is the gate key: that approver key is refused by the gate', hsmSkip, () => {
  const t = freshToken();
  const env = { ...process.env, ...t.env, CLOAKPIPE_PKCS11_PIN: t.pin };
  const home = join(tempDir(), 'home');
  const init = cloakpipe(['init', '--home', home, '--key', t.uri('gate')], { env });
  assert.equal(init.status, 0, init.stderr);
  const prefix = join(tempDir(), 'approver');
  const kg = cloakpipe(['keygen', '--key', t.uri('gate'), '--out', prefix, '--json'], { env });
  assert.equal(kg.status, 0, kg.stderr);
  assert.equal(JSON.parse(kg.stdout).generated, false, 'the pair found in the token is the gate key');
  const r = gate(home, ['--approver-key', `${prefix}.pub`], env);
  assert.equal(r.status, 2, r.stderr);
  assert.match(r.stderr, /is the gate key itself/);
  assert.equal(r.spawned, false);
  assert.ok(!r.stderr.includes(t.pin), 'the PIN is never printed');
});
