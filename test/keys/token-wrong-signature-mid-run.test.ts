// A token that signs some entries of a run right and others wrong (hanging-token.c's
// corruptHolding: a signature over an entry holding `undeclared_tool`, here the refusals of an
// undeclared tool, comes back with a bit flipped). Calls at once are decided in one group, whose
// run the signing thread signs: it must check every signature, not only the run's first. An
// entry whose signature does not verify is not a signed entry: its group is refused fail_closed,
// nothing of it reaches the server, and the ledger verifies. Before, the run's later entries went
// unchecked: the group committed, its allowed calls were forwarded, and verify failed. The real
// binary, the official SDK client, server-memory and a real SoftHSM token.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { cloakpipe } from '../helpers/cli.js';
import { call, startGate, summary } from '../helpers/gate.js';
import { hsmSkip } from '../helpers/softhsm.js';
import { entity, homeOnHangingToken, memoryGate } from '../helpers/hanging-token.js';

const ROUNDS = 6;
const AT_ONCE = 8;
const name = (round: number, i: number) => `mixed${round}x${i}`;

test('a token that signs some entries of a run wrong: the ledger verifies, and no call of a refused group reached the server', hsmSkip, async (t: TestContext) => {
  const { tok, env, home } = homeOnHangingToken(t);
  t.after(() => tok.corruptHolding(null));
  const { memory, options } = memoryGate(tok, home, 'mid-run@1');
  const g = await startGate(options);
  const outcomes: string[][] = [];
  try {
    assert.equal(summary(await call(g, 'create_entities', entity('before'))), 'ok');
    tok.corruptHolding('undeclared_tool');
    // A declared call first, then undeclared ones, all at once: one group, a run whose first
    // entry signs right and whose later ones do not.
    for (let round = 0; round < ROUNDS; round++)
      outcomes.push(
        (await Promise.all(Array.from({ length: AT_ONCE }, (_, i) => call(g, i % 2 === 0 ? 'create_entities' : 'not_declared', entity(name(round, i)), undefined, 60_000)))).map(summary),
      );
    tok.corruptHolding(null);
    let after = '';
    for (let i = 0; i < 5 && after !== 'ok'; i++) after = summary(await call(g, 'create_entities', entity(`after${i}`), undefined, 60_000));
    assert.equal(after, 'ok', g.stderr());
  } finally {
    await g.close();
  }
  const v = cloakpipe(['verify', '--home', home], { env });
  assert.equal(v.status, 0, v.stdout + v.stderr);
  const served = existsSync(memory) ? readFileSync(memory, 'utf8') : '';
  outcomes.forEach((round, r) =>
    round.forEach((o, i) => {
      if (i % 2 === 1) assert.match(o, /^(fail_closed|undeclared_tool)/);
      if (o !== 'ok') assert.ok(!served.includes(`"${name(r, i)}"`), `a refused call (${o.slice(0, 40)}) was not forwarded`);
    }),
  );
  assert.ok(outcomes.flat().some((o) => /^fail_closed/.test(o)), 'the faults were met');
});
