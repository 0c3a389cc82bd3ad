// A token that comes back but then never answers C_Initialize or C_Login while the gate
// reconnects to it (hanging-token.c holds the call inside the module): the call that reconnects
// is refused fail_closed within the bound, the held call named on stderr, nothing reaches the
// server; once the token answers, signing resumes with the same key and the ledger verifies.
// The real binary, the official SDK client, server-memory and a real SoftHSM token.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { cloakpipe } from '../helpers/cli.js';
import { call, startGate, summary, waitFor } from '../helpers/gate.js';
import { hsmSkip } from '../helpers/softhsm.js';
import { entity, homeOnHangingToken, memoryGate, type Held } from '../helpers/hanging-token.js';

for (const [held, fn] of [
  ['init', 'C_Initialize'],
  ['login', 'C_Login'],
] as [Held, string][]) {
  test(`the token holding ${fn} while the gate reconnects: refused fail_closed within the bound, named; resumes once it answers`, hsmSkip, async (t: TestContext) => {
    const { tok, env, home } = homeOnHangingToken(t, held);
    const { memory, options } = memoryGate(tok, home, 'reconnect@1');
    const g = await startGate(options);
    try {
      assert.equal(summary(await call(g, 'create_entities', entity('before'))), 'ok');
      tok.remove(); // the connection breaks: the next call reconnects
      assert.match(summary(await call(g, 'create_entities', entity('gone'), undefined, 60_000)), /^fail_closed/);
      tok.hold(held);
      tok.restore();
      const refused = await call(g, 'create_entities', entity('held'), undefined, 60_000);
      assert.match(summary(refused), /^fail_closed/);
      await waitFor(() => g.stderr().includes(`did not answer ${fn} within 5 s`), 10_000, `stderr to name ${fn}`);
      tok.answer(held);
      // The held call returns now; the next call (or the one after, while the late answer is
      // drained) reconnects and signs.
      let resumed = '';
      for (let i = 0; i < 5 && resumed !== 'ok'; i++) {
        if (i > 0) await new Promise((r) => setTimeout(r, 1000));
        resumed = summary(await call(g, 'create_entities', entity(`after${i}`), undefined, 60_000));
      }
      assert.equal(resumed, 'ok', `signing never resumed:\n${g.stderr()}`);
      const stored = readFileSync(memory, 'utf8');
      assert.ok(stored.includes('before') && stored.includes('after'), 'the calls before and after reached the server');
      assert.ok(!stored.includes('"gone"') && !stored.includes('"held"'), 'nothing reached the server while the key could not sign');
      assert.ok(!g.stderr().includes(tok.pin), 'the PIN is not printed');
    } finally {
      await g.close();
    }
    const v = cloakpipe(['verify', '--home', home], { env });
    assert.equal(v.status, 0, v.stdout + v.stderr);
  });
}
