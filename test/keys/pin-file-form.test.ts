// A PIN file whose first line is not the PIN alone (or CLOAKPIPE_PKCS11_PIN with a line end): a space or tab after it (an editor's), a NUL,
// a byte-order mark (Windows Notepad), bytes that are not UTF-8. Each would be sent to the token as
// a PIN that is wrong, and a wrong PIN counts towards locking the token's user PIN (a real HSM locks
// it after a few). Now each is refused before the token sees it, exit 2, named, the PIN unprinted;
// the token's "a wrong PIN was tried" flag stays clear. A line ended by CRLF or a lone CR is the
// PIN. Before, each was tried: CKR_PIN_INCORRECT, and the flag set. The real binary and SoftHSM.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cloakpipe, tempDir } from '../helpers/cli.js';
import { freshToken, hsmSkip, pkcs, straightToToken, type Token } from '../helpers/softhsm.js';

/** Whether the token has seen a wrong PIN since it was made (CKF_USER_PIN_COUNT_LOW). */
function wrongPinTried(t: Token): boolean {
  return straightToToken(t, null, (p) => {
    const slot = p.C_GetSlotList(true).find((s) => p.C_GetTokenInfo(s).label.trim() === t.label)!;
    return (p.C_GetTokenInfo(slot).flags & pkcs.CKF_USER_PIN_COUNT_LOW) !== 0;
  });
}

function initWith(t: Token, bytes: Buffer) {
  const pinFile = join(tempDir(), 'pin');
  writeFileSync(pinFile, bytes, { mode: 0o600 });
  return cloakpipe(['init', '--home', join(tempDir(), 'home'), '--key', t.uri(), '--pin-file', pinFile], { env: { ...process.env, ...t.env, CLOAKPIPE_PKCS11_PIN: undefined } });
}

test('a PIN file with a trailing space, a tab, a NUL, a BOM or non-UTF-8 bytes is refused before the token sees it; CRLF and CR end the line', hsmSkip, () => {
  const t = freshToken();
  const bad: [string, Buffer][] = [
    ['a trailing space', Buffer.from(`${t.pin} \n`)],
    ['a leading tab', Buffer.from(`\t${t.pin}\n`)],
    ['a NUL', Buffer.from(`${t.pin}\0\n`)],
    ['a byte-order mark', Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(`${t.pin}\n`)])],
    ['bytes that are not UTF-8', Buffer.concat([Buffer.from(t.pin), Buffer.from([0xe9, 0x0a])])],
  ];
  for (const [name, bytes] of bad) {
    const r = initWith(t, bytes);
    assert.equal(r.status, 2, `${name}: ${r.stderr}`);
    assert.match(r.stderr, /(the first line of )?PIN file .* is not a PIN alone \(.+\): refused before the token sees it/, name);
    assert.ok(!(r.stdout + r.stderr).includes(t.pin), `${name}: no PIN printed`);
    assert.equal(wrongPinTried(t), false, `${name}: the token saw a wrong PIN`);
  }
  // A secret made from a file and put in the environment keeps the file's line end.
  const env = cloakpipe(['init', '--home', join(tempDir(), 'home'), '--key', t.uri()], { env: { ...process.env, ...t.env, CLOAKPIPE_PKCS11_PIN: `${t.pin}\n` } });
  assert.equal(env.status, 2, env.stderr);
  assert.match(env.stderr, /CLOAKPIPE_PKCS11_PIN is not a PIN alone \(a space, tab, line end or byte-order mark before or after it\): refused before the token sees it/);
  assert.ok(!env.stderr.includes(t.pin));
  assert.equal(wrongPinTried(t), false, 'the environment: the token saw a wrong PIN');
  for (const [name, bytes] of [
    ['CRLF', Buffer.from(`${t.pin}\r\nsecond line\r\n`)],
    ['a lone CR', Buffer.from(`${t.pin}\r`)],
  ] as const) {
    const r = initWith(t, bytes);
    assert.equal(r.status, 0, `${name}: ${r.stderr}`);
  }
  assert.equal(wrongPinTried(t), false);
});
