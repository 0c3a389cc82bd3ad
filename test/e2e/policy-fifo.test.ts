// The task context, the manifest and the policy are files an operator (or an orchestrator)
// replaces while the gate runs. One replaced by a FIFO, or by a link to a device, must fail
// calls closed: reading it by name waited for a writer (or read without end) on the gate's
// main thread, and every call stopped with it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { renameSync, symlinkSync, unlinkSync, writeFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { arrived, call, desk, openDesk, summary } from '../helpers/support-desk.js';

const POLICY = `@id("all")
permit (principal, action == Action::"call_tool", resource);
`;
const CUSTOMER = { customer_id: 'C000042' };

/** Put a FIFO (or a link to /dev/zero) where `path` is, by rename; returns a function restoring it. */
function swapIn(path: string, kind: 'fifo' | 'device'): () => void {
  const saved = readFileSync(path);
  const aside = `${path}.swap`;
  if (kind === 'fifo') execFileSync('mkfifo', [aside]);
  else symlinkSync('/dev/zero', aside);
  renameSync(aside, path);
  return () => {
    unlinkSync(path);
    writeFileSync(`${path}.back`, saved);
    renameSync(`${path}.back`, path);
  };
}

test('a FIFO or a device put in place of the context, the manifest or the policy fails calls closed; the gate goes on', async () => {
  const d = desk({ policy: POLICY, contexts: { c: { task: { id: 'T-1' } } } });
  const g = await openDesk(d, 'c');
  try {
    assert.equal(summary(await call(g, 'lookup_customer', CUSTOMER)), 'ok');
    for (const file of [d.contexts.c, d.manifest, d.policy]) {
      for (const kind of ['fifo', 'device'] as const) {
        const restore = swapIn(file, kind);
        const r = await call(g, 'lookup_customer', CUSTOMER, undefined, 5_000);
        assert.equal(r.ok ? 'ok' : r.reason, 'fail_closed', `${file} as a ${kind}`);
        restore();
        assert.equal(summary(await call(g, 'lookup_customer', CUSTOMER)), 'ok', `${file} restored after a ${kind}`);
      }
    }
    assert.equal(arrived(d).length, 7);
    assert.match(g.stderr(), /not a regular file/);
  } finally {
    await g.close();
  }
});
