// The kind column beside each stored entry is an index the signature does not cover: whoever can
// write the database can change it (verify names such a row, row_edited, while the signed chain
// holds: verify-row-columns.test.ts). Sealing an epoch must not take it on
// trust. An edited column (the newest epoch's row relabelled, later decisions relabelled as
// anchor failures) is named and nothing is sealed over it, rather than the gate key signing an
// epoch that overlaps the last one (verify then refused the gate's own entry, epoch_invalid) or
// leaving the new decisions out of every epoch while anchors fail. Through the real binary.
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

async function anchor(home: string, ...flags: string[]): Promise<{ status: number; stdout: string; stderr: string }> {
  try {
    const r = await promisify(execFile)(process.execPath, [CLI, 'ledger', 'anchor', '--json', '--home', home, ...flags], { timeout: 60_000 });
    return { status: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (e) {
    const err = e as { code?: number; stdout: string; stderr: string };
    if (typeof err.code !== 'number') throw e;
    return { status: err.code, stdout: err.stdout, stderr: err.stderr };
  }
}

/** A home with one session anchored (its epoch's seq) and one session after it. */
async function anchoredThenMore(): Promise<{ home: string; epochSeq: number }> {
  const home = makeHome();
  await session(home, 1);
  const first = await anchor(home);
  assert.equal(first.status, 0, first.stderr);
  const epochSeq = JSON.parse(first.stdout).epoch.seq as number;
  await session(home, 1);
  return { home, epochSeq };
}

test('an epoch row relabelled in the kind column: the next seal is refused, naming the row, and verify names the edited row', async () => {
  const { home, epochSeq } = await anchoredThenMore();
  tamper(home, (db) => db.prepare(`UPDATE entries SET kind = 'decision' WHERE seq = ?`).run(epochSeq));

  const second = await anchor(home);
  assert.notEqual(second.status, 0, second.stdout);
  assert.match(second.stderr, new RegExp(`entry ${epochSeq} is an epoch entry the kind column does not name as one`));
  const v = cloakpipe(['verify', '--home', home]);
  assert.equal(v.status, 1, v.stdout + v.stderr);
  assert.match(v.stdout, new RegExp(`INVALID at seq ${epochSeq} \\(row_edited\\): .*its kind column differs from the signed entry`));
});

test('decisions relabelled as anchor failures in the kind column are still sealed while anchors fail', async () => {
  tsa = await startOpensslTsa('Index TSA');
  const root = join(tempDir(), 'tsa.pem');
  writeFileSync(root, tsa.chainPem);
  const down = ['--tsa', 'http://127.0.0.1:9/', '--tsa-root', root, '--timeout', '5s'];
  const home = makeHome();
  await session(home, 1);
  const first = await anchor(home, ...down);
  assert.equal(first.status, 1, first.stderr);
  const epochSeq = JSON.parse(first.stdout).epoch.seq as number;
  await session(home, 2);
  // The failure entry and every decision after it now claim to be anchor failures.
  tamper(home, (db) => db.prepare(`UPDATE entries SET kind = 'anchor_failure' WHERE seq > ?`).run(epochSeq));

  const second = await anchor(home, ...down);
  assert.equal(second.status, 1, second.stderr);
  const r = JSON.parse(second.stdout) as { epoch: { seq: number; first: number }; sealed: boolean };
  assert.equal(r.sealed, true, second.stdout);
  assert.equal(r.epoch.first, epochSeq);
  assert.ok(r.epoch.seq > epochSeq + 4, second.stdout);
  const v = cloakpipe(['verify', '--home', home]);
  assert.equal(v.status, 1, v.stdout + v.stderr);
  assert.match(v.stdout, /\(row_edited\): .*its kind column differs from the signed entry/);
});

test('a decision relabelled as the newest epoch in the kind column: the seal is refused, naming the row; nothing sealed from it', async () => {
  const { home, epochSeq } = await anchoredThenMore();
  const decoy = epochSeq + 2; // a later entry, not an epoch
  tamper(home, (db) => db.prepare(`UPDATE entries SET kind = 'epoch' WHERE seq = ?`).run(decoy));

  const second = await anchor(home);
  assert.notEqual(second.status, 0, second.stdout);
  assert.match(second.stderr, new RegExp(`the row indexed as the newest epoch \\(seq ${decoy}\\) is not an epoch entry`));
  const v = cloakpipe(['verify', '--home', home]);
  assert.equal(v.status, 1, v.stdout + v.stderr);
  assert.match(v.stdout, new RegExp(`INVALID at seq ${decoy} \\(row_edited\\)`));
});
