// verify --store reads a fleet chain in a bounded heap, as verify of an export does: a chain
// larger than the heap verifies (it was read whole into memory, and the command ran out of heap).
// A real signed chain (the production Ledger), stored in a real PostgreSQL as a gate's rows.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { ROOT } from '../helpers/cli.js';
import { pgSkip } from '../store/postgres/pg.js';
import { bigChain } from '../helpers/fleet.js';

test('verify --store: a chain larger than the heap verifies', { ...pgSkip, timeout: 300_000 }, async () => {
  const { url, bytes } = await bigChain(40_000);
  assert.ok(bytes > 16 * 1024 * 1024, `the chain (${bytes} bytes) is larger than the heap`);
  const r = spawnSync(process.execPath, ['--max-old-space-size=16', join(ROOT, 'dist/src/cli/main.js'), 'verify', '--store', url, '--gate', 'gate-big', '--workers', '0'], {
    encoding: 'utf8',
    timeout: 240_000,
  });
  assert.equal(r.status, 0, r.stdout + r.stderr.slice(-2000));
  assert.match(r.stdout, /ledger verified: 40000 entries/);
});
