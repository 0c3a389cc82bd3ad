// Logging in again after the token comes back: with the PIN as its file holds it now (a PIN
// rotated while the gate ran), and never again with a PIN the token refused, which a real HSM
// counts towards locking its user PIN. The real binary, a real SoftHSM token behind a module that
// counts logins (hanging-token.c); the PIN rotated with C_SetPIN on the token itself.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { MEMORY, cloakpipe, tempDir, writeFiles, PERMIT_ALL } from '../helpers/cli.js';
import { startGate } from '../helpers/gate.js';
import { hsmSkip, straightToToken } from '../helpers/softhsm.js';
import { hangingToken, type HangingToken } from '../helpers/hanging-token.js';

const CKR_OK = 0;
const CKR_PIN_INCORRECT = 0xa0;

/** The operator rotates the user PIN on the token (C_SetPIN), straight through SoftHSM. */
function rotatePin(t: HangingToken, from: string, to: string): void {
  straightToToken(t, from, (p, session) => p.C_SetPIN(session, from, to));
}

const entity = (name: string) => ({ entities: [{ name, entityType: 'note', observations: [] }] });

test('a reconnect logs in with the PIN file as it is now, and tries a refused PIN only once', hsmSkip, async () => {
  const t = hangingToken();
  const env = { ...process.env, ...t.env, CLOAKPIPE_PKCS11_PIN: undefined };
  const home = join(tempDir(), 'home');
  const init = cloakpipe(['init', '--home', home, '--key', t.uri(), '--pin-file', t.pinFile], { env });
  assert.equal(init.status, 0, init.stderr);
  const manifest = 'version: 1\nrelease: pin@1\ntools:\n  create_entities:\n    effect: write\n    arguments:\n      entities: { type: array, max_items: 5, required: true, items: { type: object } }\n';
  const f = writeFiles({ 'm.yaml': manifest, 'p.cedar': PERMIT_ALL });
  const g = await startGate({ home, manifest: f['m.yaml'], policy: f['p.cedar'], flags: ['--pin-file', t.pinFile], upstream: [process.execPath, MEMORY], env: { ...t.env, MEMORY_FILE_PATH: join(tempDir(), 'memory.jsonl') } });
  const call = (name: string) =>
    g.client.callTool({ name: 'create_entities', arguments: entity(name) }).then(
      (r) => (r.isError ? 'error' : 'ok'),
      (e: unknown) => (e instanceof McpError ? String((e.data as { reason?: string })?.reason) : String(e)),
    );
  /** The token goes away (the gate's session with it) and comes back. */
  const bounce = async () => {
    t.remove();
    assert.equal(await call('away'), 'fail_closed');
    t.restore();
  };
  try {
    assert.equal(await call('first'), 'ok');
    // Rotated while the gate runs: the file holds the new PIN before the gate logs in again.
    await bounce();
    const rotated = t.pin + '-2';
    rotatePin(t, t.pin, rotated);
    writeFileSync(t.pinFile, rotated + '\n', { mode: 0o600 });
    const before = t.logins().length;
    assert.equal(await call('after-rotation'), 'ok', g.stderr());
    assert.deepEqual(t.logins().slice(before), [CKR_OK], 'one login, with the rotated PIN');
    // A wrong PIN in the file: one refused login, then no more tries however many calls come.
    await bounce();
    writeFileSync(t.pinFile, 'not-the-pin\n', { mode: 0o600 });
    const wrongFrom = t.logins().length;
    for (const name of ['w1', 'w2', 'w3']) assert.equal(await call(name), 'fail_closed');
    assert.deepEqual(t.logins().slice(wrongFrom), [CKR_PIN_INCORRECT], 'the refused PIN was tried once');
    // The right PIN back in the file: the next call logs in and signs.
    writeFileSync(t.pinFile, rotated + '\n', { mode: 0o600 });
    assert.equal(await call('fixed'), 'ok', g.stderr());
    assert.ok(!g.stderr().includes(t.pin), 'no PIN printed'); // the rotated PIN begins with the first
  } finally {
    await g.close();
  }
});
