// A token that stops answering inside a call (hanging-token.c: SoftHSM behind a module whose
// C_Sign waits while told to) never freezes cloakpipe: a signature on the main thread (a
// checkpoint's, a Rekor anchor's, a group read's) and one on the signing thread (a call's
// entries) are each given up on at a deadline, refused fail_closed, and a gate told SIGTERM
// still ends. The real binary and a real SoftHSM token; every wait bounded.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { readFileSync } from 'node:fs';
import { cloakpipe, tempDir } from '../helpers/cli.js';
import { startGate } from '../helpers/gate.js';
import { hsmSkip } from '../helpers/softhsm.js';
import { entity, homeOnHangingToken, memoryGate, runFor } from '../helpers/hanging-token.js';

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
  const { memory, options } = memoryGate(tok, home, 'hung@1');
  const g = await startGate(options);
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
