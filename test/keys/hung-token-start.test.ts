// A token that never answers C_Initialize or C_Login when a command starts (a network HSM gone
// silent, hanging-token.c holding the call inside the module): `init --key` and the gate each end
// within the bound, the call named, the PIN never printed, the gate's upstream never spawned and
// init's home never made. The exit is SIGKILL's (ADR 094): the thread held in the module is
// one Node would wait for at exit for ever. The real binary and a real SoftHSM token.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { PERMIT_ALL, tempDir, writeFiles } from '../helpers/cli.js';
import { hsmSkip } from '../helpers/softhsm.js';
import { hangingToken, homeOnHangingToken, runFor, type Held } from '../helpers/hanging-token.js';

const CALLS: [Held, string][] = [
  ['init', 'C_Initialize'],
  ['login', 'C_Login'],
];

/** A failed start with a held call: the call named, the exit reported, the PIN never printed. */
function assertHeldStart(r: Awaited<ReturnType<typeof runFor>>, call: string, pin: string): void {
  assert.ok(r, `still running 60 s after the token stopped answering ${call}`);
  assert.ok(r.code !== 0, r.stderr);
  assert.match(r.stderr, new RegExp(`did not answer ${call} within 5 s`));
  assert.match(r.stderr, /a PKCS#11 token never answered a call .*: ending by SIGKILL \(exit status 137\) instead of status 2/);
  assert.equal(r.signal, 'SIGKILL', 'the exit past a held thread (ADR 094)');
  assert.ok(!r.stderr.includes(pin), 'the PIN is not printed');
}

for (const [held, call] of CALLS) {
  test(`init --key, the token holding ${call}: ends within the bound, named, no home made`, hsmSkip, async (t: TestContext) => {
    const tok = hangingToken();
    t.after(() => tok.answer(held));
    tok.hold(held);
    const home = join(tempDir(), 'home');
    const r = await runFor(['init', '--home', home, '--key', tok.uri(), '--pin-file', tok.pinFile], { ...process.env, ...tok.env, CLOAKPIPE_PKCS11_PIN: undefined }, 60_000);
    assertHeldStart(r, call, tok.pin);
    assert.ok(!existsSync(join(home, 'gate.pub')), 'no home was made');
  });

  test(`mcp-proxy, the token holding ${call} at start: ends within the bound, named, nothing spawned`, hsmSkip, async (t: TestContext) => {
    const { tok, env, home } = homeOnHangingToken(t, held);
    tok.hold(held);
    const marker = join(tempDir(), 'spawned');
    const f = writeFiles({ 'm.yaml': 'version: 1\nrelease: held@1\ntools: {}\n', 'p.cedar': PERMIT_ALL });
    const args = ['mcp-proxy', '--home', home, '--pin-file', tok.pinFile, '--manifest', f['m.yaml'], '--policy', f['p.cedar'], '--', 'sh', '-c', 'touch "$0"; cat >/dev/null', marker];
    const r = await runFor(args, env, 60_000);
    assertHeldStart(r, call, tok.pin);
    assert.match(r!.stderr, /gate key: /);
    assert.ok(!existsSync(marker), 'the upstream was never spawned');
  });
}
