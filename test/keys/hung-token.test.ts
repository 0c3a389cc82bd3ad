// A token that stops answering inside a call (hanging-token.c: SoftHSM behind a module whose
// C_Sign waits while told to) never freezes cloakpipe: a signature on the main thread (a
// checkpoint's, a Rekor anchor's, a group read's) and one on the signing thread (a call's
// entries) are each given up on at a deadline, refused fail_closed, and a gate told SIGTERM
// still ends. The real binary and a real SoftHSM token; every wait bounded.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { readFileSync } from 'node:fs';
import { MEMORY, cloakpipe, tempDir, writeFiles, PERMIT_ALL } from '../helpers/cli.js';
import { startGate } from '../helpers/gate.js';
import { hsmSkip } from '../helpers/softhsm.js';
import { hangingToken, runFor, type HangingToken } from '../helpers/hanging-token.js';

/** A home whose gate key is in a token that answers until told to hold (answered again after the test). */
function homeOnHangingToken(t: TestContext): { tok: HangingToken; env: NodeJS.ProcessEnv; home: string } {
  const tok = hangingToken();
  t.after(() => tok.answer('sign'));
  const env = { ...process.env, ...tok.env, CLOAKPIPE_PKCS11_PIN: undefined };
  const home = join(tempDir(), 'home');
  const init = cloakpipe(['init', '--home', home, '--key', tok.uri(), '--pin-file', tok.pinFile], { env });
  assert.equal(init.status, 0, init.stderr);
  return { tok, env, home };
}

test('a signature on the main thread that the token never answers: the command fails, named, instead of hanging', hsmSkip, async (t) => {
  const { tok, env, home } = homeOnHangingToken(t);
  tok.hold('sign');
  const r = await runFor(['ledger', 'checkpoint', '--home', home, '--pin-file', tok.pinFile, '--out', join(tempDir(), 'note')], env, 60_000);
  assert.ok(r, 'ledger checkpoint was still running 60 s after its token stopped answering');
  assert.notEqual(r.code, 0, r.stderr);
  assert.match(r.stderr, /did not answer|has not answered|never answered/);
  assert.ok(!r.stderr.includes(tok.pin));
});

test('a token that stops answering under a running gate: the call is refused fail_closed, nothing forwarded, and SIGTERM still ends the gate', hsmSkip, async (t) => {
  const { tok, home } = homeOnHangingToken(t);
  const memory = join(tempDir(), 'memory.jsonl');
  const manifest = 'version: 1\nrelease: hung@1\ntools:\n  create_entities:\n    effect: write\n    arguments:\n      entities: { type: array, max_items: 5, required: true, items: { type: object } }\n';
  const f = writeFiles({ 'm.yaml': manifest, 'p.cedar': PERMIT_ALL });
  const g = await startGate({ home, manifest: f['m.yaml'], policy: f['p.cedar'], flags: ['--pin-file', tok.pinFile], upstream: [process.execPath, MEMORY], env: { ...tok.env, MEMORY_FILE_PATH: memory } });
  const entity = (name: string) => ({ entities: [{ name, entityType: 'note', observations: [] }] });
  const first = await g.client.callTool({ name: 'create_entities', arguments: entity('before') });
  assert.ok(!first.isError, JSON.stringify(first));
  tok.hold('sign');
  const refused = await g.client.callTool({ name: 'create_entities', arguments: entity('while-held') }, undefined, { timeout: 60_000 }).then(
    (r) => JSON.stringify(r),
    (e: unknown) => (e instanceof McpError ? e.message : String(e)),
  );
  assert.match(refused, /fail_closed/);
  const stored = readFileSync(memory, 'utf8');
  assert.ok(stored.includes('before') && !stored.includes('while-held'), 'nothing reached the server while the key could not sign');
  process.kill(g.pid, 'SIGTERM');
  const ended = await Promise.race([g.exited.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), 60_000))]);
  assert.ok(ended, `the gate was still running 60 s after SIGTERM:\n${g.stderr()}`);
  assert.match(g.stderr(), /cannot sign/);
});
