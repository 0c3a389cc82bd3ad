// An attacker without the key deletes the newest entries of an anchored home, the epoch entry
// among them. The gate goes on from what is left, and a later epoch can take the deleted one's
// seq: the deleted epoch's anchor, still stored under that seq, then stood in for the new epoch's
// (anchoring only asks for the kinds an epoch lacks), so the new epoch was never anchored and the
// cut was hidden behind a token for other entries. Now no epoch is sealed at a seq that already
// holds anchors: the cut is named, and verify still names the orphaned anchor. Real binary, a
// real RFC 3161 TSA (openssl).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CLI, cloakpipe, makeHome, tempDir } from '../helpers/cli.js';
import { startOpensslTsa, type TestTsa } from '../helpers/openssl-tsa.js';
import { session, tamper } from './session.js';

let tsa: TestTsa | undefined;
after(async () => tsa?.close());

async function anchor(home: string, tsaUrl: string, root: string): Promise<{ status: number; stdout: string; stderr: string }> {
  const argv = [CLI, 'ledger', 'anchor', '--json', '--home', home, '--tsa', tsaUrl, '--tsa-root', root, '--timeout', '10s'];
  try {
    const r = await promisify(execFile)(process.execPath, argv, { timeout: 60_000 });
    return { status: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (e) {
    const err = e as { code?: number; stdout: string; stderr: string };
    if (typeof err.code !== 'number') throw e;
    return { status: err.code, stdout: err.stdout, stderr: err.stderr };
  }
}

test('a deleted anchored epoch: no new epoch is sealed at its seq under its anchor, and the cut stays visible', async () => {
  tsa = await startOpensslTsa('Cut TSA');
  const root = join(tempDir(), 'tsa.pem');
  writeFileSync(root, tsa.chainPem);
  const home = makeHome();
  await session(home, 1);
  const first = await anchor(home, tsa.url, root);
  assert.equal(first.status, 0, first.stderr);
  const epochSeq = JSON.parse(first.stdout).epoch.seq as number;

  // The attacker removes the refused decision, the shutdown and the anchored epoch entry.
  tamper(home, (db) => db.prepare('DELETE FROM entries WHERE seq >= ?').run(epochSeq - 2));
  const anchorRow = () => tamper(home, (db) => db.prepare('SELECT data FROM anchors WHERE epoch_seq = ?').all(epochSeq));
  const stored = anchorRow();
  assert.equal(stored.length, 1);

  // An epoch at epochSeq - 2 whose anchor fails (one failure entry after it), then one that
  // succeeds: the retry is anchored and the entries after it are sealed, at epochSeq.
  const down = await anchor(home, 'http://127.0.0.1:9/', root);
  assert.equal(down.status, 1, down.stderr);
  assert.equal(JSON.parse(down.stdout).epoch.seq, epochSeq - 2);
  const up = await anchor(home, tsa.url, root);
  assert.notEqual(up.status, 0, up.stdout);
  assert.match(up.stderr, new RegExp(`the store holds anchors for epoch ${epochSeq}, an entry the ledger does not hold`));
  assert.deepEqual(anchorRow(), stored, 'the deleted epoch anchor is kept as it was');

  const v = cloakpipe(['verify', '--home', home, '--tsa-root', root, '--json']);
  assert.equal(v.status, 1, v.stdout + v.stderr);
  assert.equal(JSON.parse(v.stdout).failure.code, 'anchor_orphan', v.stdout);
});
