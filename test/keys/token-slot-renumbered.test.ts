// A slot-id that now names another token (slots renumbered between runs: an HSM given another
// partition, a token put in the slot). The gate must not send its PIN there: the PIN is not that
// token's, and each wrong PIN counts towards locking that token's user PIN, at every start (a
// service restarted in a loop locks it). The other token's public key under the name is readable
// without a login and is not gate.pub: refused before any login, exit 2, named. Before, the gate
// logged in there with its PIN (CKR_PIN_INCORRECT, counted by the token). Real binary, real
// SoftHSM behind hanging-token.c, which counts every C_Login the token answered.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { cloakpipe, tempDir, writeFiles, PERMIT_ALL } from '../helpers/cli.js';
import { freshToken, hsmSkip, pkcs, SOFTHSM_MODULE, type Token } from '../helpers/softhsm.js';
import { hangingToken } from '../helpers/hanging-token.js';

const files = writeFiles({ 'm.yaml': 'version: 1\nrelease: slots@1\ntools: {}\n', 'p.cedar': PERMIT_ALL });

/** The slot id of the token labelled `t.label`, read straight through SoftHSM. */
function slotOf(t: Token): number {
  process.env.SOFTHSM2_CONF = t.env.SOFTHSM2_CONF;
  const p = new pkcs.PKCS11();
  p.load(SOFTHSM_MODULE);
  p.C_Initialize();
  try {
    const slot = p.C_GetSlotList(true).find((s) => p.C_GetTokenInfo(s).label.trim() === t.label)!;
    return Number(slot.readBigUInt64LE());
  } finally {
    p.C_Finalize();
  }
}

test('a slot-id naming another token than the home\'s: exit 2, named, and no PIN is tried there', hsmSkip, () => {
  const tok = hangingToken();
  const env = { ...process.env, ...tok.env, CLOAKPIPE_PKCS11_PIN: undefined };
  const home = join(tempDir(), 'home');
  assert.equal(cloakpipe(['init', '--home', home, '--key', tok.uri(), '--pin-file', tok.pinFile], { env }).status, 0);
  // Another token of the module, its own PIN and its own key under the same name.
  const other = freshToken('other', tok);
  const otherUri = `pkcs11:token=other;object=gate?module-path=${tok.modulePath}`;
  assert.equal(cloakpipe(['init', '--home', join(tempDir(), 'other'), '--key', otherUri, '--pin-file', other.pinFile], { env }).status, 0);
  const before = tok.logins().length;

  const renumbered = `pkcs11:slot-id=${slotOf(other)};object=gate?module-path=${tok.modulePath}`;
  const marker = join(tempDir(), 'spawned');
  const r = cloakpipe(
    ['mcp-proxy', '--home', home, '--key', renumbered, '--pin-file', tok.pinFile, '--manifest', files['m.yaml'], '--policy', files['p.cedar'], '--', 'sh', '-c', 'touch "$0"', marker],
    { env, input: '' },
  );
  assert.equal(r.status, 2, r.stderr);
  assert.match(r.stderr, /is not this home's gate key .*shows a public key object="gate" that is not the one expected \(seen before any login: its PIN was not tried; a slot renumbered\?/);
  assert.equal(existsSync(marker), false, 'nothing spawned');
  assert.deepEqual(tok.logins().slice(before), [], 'no login was tried in the other token');
  assert.ok(!r.stderr.includes(tok.pin) && !r.stderr.includes(other.pin));

  // The home's own token by its slot-id opens as before.
  const own = cloakpipe(
    ['mcp-proxy', '--home', home, '--key', `pkcs11:slot-id=${slotOf(tok)};object=gate?module-path=${tok.modulePath}`, '--pin-file', tok.pinFile, '--manifest', files['m.yaml'], '--policy', files['p.cedar'], '--', 'sh', '-c', 'touch "$0"', marker],
    { env, input: '' },
  );
  assert.equal(own.status, 0, own.stderr);
  assert.equal(existsSync(marker), true);
});
