// A gate told to stop while its token holds a signature (hanging-token.c): the shutdown entry
// needs the gate key, so it is written when the token has answered by then, and otherwise it is
// not (ADR 094): the gate ends within the bound by SIGKILL, saying so on stderr with the status
// (137) and why the key could not sign, and the ledger, ending at its last signed entry, still
// verifies. The real binary driven over stdio, server-memory and a real SoftHSM token.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { cloakpipe } from '../helpers/cli.js';
import { RawGate } from '../helpers/raw-gate.js';
import { callRaw, openSession } from '../helpers/raw-session.js';
import { hsmSkip } from '../helpers/softhsm.js';
import { entity, homeOnHangingToken, memoryGate } from '../helpers/hanging-token.js';

const call = (name: string) => ({ arguments: entity(name) });

/** A gate whose token holds C_Sign after one signed call; `answered`: the token answers again before SIGTERM. */
async function stopWhileHeld(t: TestContext, answered: boolean) {
  const { tok, env, home } = homeOnHangingToken(t);
  const g = new RawGate(memoryGate(tok, home, 'exit@1').options);
  await openSession(g);
  assert.ok((await callRaw(g, 1, 'create_entities', call('before'))).result, 'the first call is answered');
  tok.hold('sign');
  const refused = await callRaw(g, 2, 'create_entities', call('held'));
  assert.equal(refused.error?.data?.reason, 'fail_closed', JSON.stringify(refused));
  if (answered) tok.answer('sign');
  g.child.kill('SIGTERM');
  const code = await Promise.race([g.exited, new Promise<'hung'>((r) => setTimeout(() => r('hung'), 60_000))]);
  assert.notEqual(code, 'hung', `the gate was still running 60 s after SIGTERM:\n${g.stderr}`);
  tok.answer('sign');
  const shown = cloakpipe(['ledger', 'show', '--home', home, '--json'], { env });
  const kinds = shown.stdout.trim().split('\n').map((l) => (JSON.parse(l) as { kind: string }).kind);
  const verified = cloakpipe(['verify', '--home', home], { env });
  assert.equal(verified.status, 0, verified.stdout + verified.stderr);
  assert.ok(!g.stderr.includes(tok.pin), 'the PIN is not printed');
  return { code, stderr: g.stderr, kinds };
}

test('the token answers again before the gate stops: the shutdown entry is written, exit 0', hsmSkip, async (t) => {
  const r = await stopWhileHeld(t, true);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.kinds.at(-1), 'shutdown', r.kinds.join(' '));
  assert.doesNotMatch(r.stderr, /SIGKILL/);
});

test('the token still holds a signature when the gate stops: no shutdown entry, SIGKILL said on stderr with its status and why', hsmSkip, async (t) => {
  const r = await stopWhileHeld(t, false);
  assert.equal(r.code, null, `ended by a signal, not a status: ${r.stderr}`);
  assert.ok(!r.kinds.includes('shutdown'), r.kinds.join(' '));
  assert.match(r.stderr, /cannot sign: a signature the token began has not returned yet/);
  assert.match(r.stderr, /a PKCS#11 token never answered a call .*: ending by SIGKILL \(exit status 137\) instead of status \d/);
});
