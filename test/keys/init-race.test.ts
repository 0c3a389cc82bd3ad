// Two `init --key` at once on a token that holds no key: each searches, finds none and generates
// a pair under the same label. Before, the token was left with two keys of one name and no id, so
// the init that succeeded had a home whose key could no longer be opened ("holds 2 private keys
// matching"). Now a pair made beside another is removed again by the init that made it: the token
// keeps at most one, and every init that succeeded has a home that opens it. The real binary, a
// real SoftHSM token; the inits are lined up by holding C_Login in the module (hanging-token.c)
// and letting them all go at once.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CLI, cloakpipe, tempDir, writeFiles, PERMIT_ALL } from '../helpers/cli.js';
import { waitFor } from '../helpers/gate.js';
import { hsmSkip, pkcs, straightToToken } from '../helpers/softhsm.js';
import { hangingToken, type HangingToken } from '../helpers/hanging-token.js';


/** The private keys labelled `gate` in the token, read straight through SoftHSM. */
function gateKeys(t: HangingToken): number {
  return straightToToken(t, t.pin, (p, session) => {
    p.C_FindObjectsInit(session, [{ type: pkcs.CKA_CLASS, value: pkcs.CKO_PRIVATE_KEY }, { type: pkcs.CKA_LABEL, value: 'gate' }]);
    const found = p.C_FindObjects(session, 16);
    p.C_FindObjectsFinal(session);
    return found.length;
  });
}

function init(t: HangingToken, home: string): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, 'init', '--home', home, '--key', t.uri(), '--pin-file', t.pinFile], { env: { ...process.env, ...t.env, CLOAKPIPE_PKCS11_PIN: undefined }, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 120_000);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stderr });
    });
  });
}

test('inits racing on an empty token leave one key at most, and every home that init made opens it', hsmSkip, async () => {
  const files = writeFiles({ 'm.yaml': 'version: 1\nrelease: race@1\ntools: {}\n', 'p.cedar': PERMIT_ALL });
  for (let round = 0; round < 3; round++) {
    const t = hangingToken();
    t.hold('login');
    const homes = [0, 1, 2, 3].map(() => join(tempDir(), 'home'));
    const running = homes.map((h) => init(t, h));
    await new Promise((r) => setTimeout(r, 1500)); // every init reaches C_Login, held there
    t.answer('login');
    const results = await Promise.all(running);
    // Every init reached the login, but one that SoftHSM's file store showed no token (another
    // process writing it as this one listed the slots).
    const turnedAway = results.filter((r) => /no token "cloakpipe"/.test(r.stderr)).length;
    await waitFor(() => t.logins().length === homes.length - turnedAway, 10_000, 'every init to have logged in');
    assert.ok(gateKeys(t) <= 1, `round ${round}: the token holds ${gateKeys(t)} keys labelled gate`);
    const made = homes.filter((_, i) => results[i].code === 0);
    // An init that lost (or whose login SoftHSM's file store turned away under the crowd) says why.
    for (const [i, r] of results.entries()) if (r.code !== 0) assert.match(r.stderr, /^cloakpipe init: gate key: .*token "cloakpipe"/, `round ${round}, init ${i}`);
    for (const home of made) {
      const g = cloakpipe(['mcp-proxy', '--home', home, '--pin-file', t.pinFile, '--manifest', files['m.yaml'], '--policy', files['p.cedar'], '--', 'sh', '-c', 'cat >/dev/null'], {
        input: '',
        env: { ...process.env, ...t.env, CLOAKPIPE_PKCS11_PIN: undefined },
      });
      assert.equal(g.status, 0, `round ${round}: a home init made does not open its key: ${g.stderr}`);
    }
    if (made.length > 1) assert.equal(new Set(made.map((h) => readFileSync(join(h, 'gate.pub'), 'utf8'))).size, 1, 'every home holds the one key');
  }
});
