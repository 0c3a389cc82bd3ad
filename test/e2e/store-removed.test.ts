// A database deleted or replaced under a running gate stops it deciding (product.md 7a, issue
// 12.16): every later call is refused fail_closed and nothing reaches the tool, since a decision
// recorded in a file nobody will ever read again is no record at all.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { call, records, setup, startGate } from '../helpers/recording-gate.js';

for (const [file, how] of [
  ['ledger.db', 'deleted'],
  ['operations.db', 'deleted'],
  ['ledger.db', 'replaced'],
  ['operations.db', 'replaced'],
] as const) {
  test(`${file} ${how} under a running gate: every later call is fail_closed, nothing is forwarded`, async () => {
    const s = setup();
    const g = await startGate(s);
    try {
      assert.ok((await call(g, 'read_note', { text: 'before' })).ok);
      assert.ok((await call(g, 'write_note', { text: 'first', key: 'k-1' })).ok);
      const path = join(s.home, file);
      if (how === 'deleted') rmSync(path);
      else {
        // A copy put in its place (same content, another file): what a restore from backup does.
        copyFileSync(path, `${path}.copy`);
        renameSync(`${path}.copy`, path);
      }
      for (const [tool, args] of [
        ['read_note', { text: 'after' }],
        ['write_note', { text: 'second', key: 'k-2' }],
      ] as const) {
        const r = await call(g, tool, args);
        assert.ok(!r.ok, `${tool} must be refused`);
        assert.equal(r.reason, 'fail_closed');
      }
      assert.deepEqual(
        records(s).map((r) => r.arguments.text),
        ['first'],
        'the upstream ran nothing after the store went away',
      );
      assert.match(g.stderr(), new RegExp(`the ${file.replace('.db', '')} database .*${file} was ${how} under the running gate`));
    } finally {
      await g.close();
    }
  });
}
