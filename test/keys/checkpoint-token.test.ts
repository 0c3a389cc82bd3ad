// ledger checkpoint signs with the gate key wherever it lives: with the key in a token, the PIN
// comes from --pin-file as for every other command that signs (keys.md: from a file or the
// environment, never the command line). Before, checkpoint said "the token needs a PIN:
// --pin-file FILE or CLOAKPIPE_PKCS11_PIN" and refused --pin-file as an unknown option, so an
// operator had to put the PIN in the environment. The real binary, a real SoftHSM token.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cloakpipe, tempDir, writeFiles, PERMIT_ALL } from '../helpers/cli.js';
import { freshToken, hsmSkip } from '../helpers/softhsm.js';

test('ledger checkpoint --pin-file on a home whose key is in a token: a note verify accepts; the PIN never printed', hsmSkip, () => {
  const t = freshToken();
  const env = { ...process.env, ...t.env, CLOAKPIPE_PKCS11_PIN: undefined };
  const home = join(tempDir(), 'home');
  assert.equal(cloakpipe(['init', '--home', home, '--key', t.uri(), '--pin-file', t.pinFile], { env }).status, 0);
  const f = writeFiles({ 'm.yaml': 'version: 1\nrelease: checkpoint@1\ntools: {}\n', 'p.cedar': PERMIT_ALL });
  const g = cloakpipe(['mcp-proxy', '--home', home, '--pin-file', t.pinFile, '--manifest', f['m.yaml'], '--policy', f['p.cedar'], '--', 'sh', '-c', 'cat >/dev/null'], { input: '', env });
  assert.equal(g.status, 0, g.stderr);
  const note = join(tempDir(), 'checkpoint.txt');
  const c = cloakpipe(['ledger', 'checkpoint', '--home', home, '--pin-file', t.pinFile, '--out', note], { env });
  assert.equal(c.status, 0, c.stderr);
  assert.match(c.stdout + c.stderr, /checkpoint of 2 entries written/);
  const v = cloakpipe(['verify', '--home', home, '--checkpoint', note], { env });
  assert.equal(v.status, 0, v.stdout + v.stderr);
  // The PIN file is held to the same rule as elsewhere; the PIN is never printed.
  const loose = join(tempDir(), 'pin');
  writeFileSync(loose, t.pin + '\n', { mode: 0o644 });
  const l = cloakpipe(['ledger', 'checkpoint', '--home', home, '--pin-file', loose], { env });
  assert.equal(l.status, 2, l.stderr);
  assert.match(l.stderr, /PIN file .* is readable by others/);
  for (const r of [c, v, l]) assert.ok(!(r.stdout + r.stderr).includes(t.pin));
});
