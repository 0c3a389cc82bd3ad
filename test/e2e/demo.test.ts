// The README's first command: the demo runs, shows allowed and refused calls, and verifies.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { ROOT } from '../helpers/cli.js';

test('npm run demo: allowed and refused calls, the ledger, a passing verify', () => {
  const r = spawnSync(process.execPath, [join(ROOT, 'dist/examples/demo/demo.js')], { encoding: 'utf8', timeout: 120_000 });
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout.match(/^ALLOWED /gm)?.length, 2);
  for (const reason of ['scope_mismatch', 'sink_ceiling_exceeded', 'undeclared_tool', 'undeclared_argument', 'argument_invalid'])
    assert.match(r.stdout, new RegExp(`→ ${reason}: `));
  assert.match(r.stdout, /sealed epoch/);
  assert.match(r.stdout, /ledger verified: \d+ entries, 1 epochs/);
});
