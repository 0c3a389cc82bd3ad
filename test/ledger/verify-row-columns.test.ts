// A ledger row holds its signed body and columns beside it (seq, ts, kind, hash) that the gate
// looks rows up by (the last epoch by kind, the head by seq). verify checked the bodies only, so a
// row whose columns were edited (an epoch's kind changed, so the gate no longer finds it) verified
// as untouched. Now verify names the first such row, `row_edited`, and the columns. Rows edited
// as an attacker with the database file would, in a home made by the real binary and in a real
// PostgreSQL; verify through the real binary.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { sealEpochInTx } from '../../src/ledger/epoch.js';
import { cloakpipe, makeHome } from '../helpers/cli.js';
import { fixture } from './epoch-fixture.js';
import { pgSkip } from '../store/postgres/pg.js';
import { bigChain, sql } from '../helpers/fleet.js';

/** A home of the real binary with 0..before-1 entries, an epoch at `before`, then `after` more. */
function homeWithEpoch(before = 10, after = 4): string {
  const home = makeHome();
  const f = fixture({ home });
  f.add(before);
  sealEpochInTx(f.ledger);
  f.add(after);
  f.db.close();
  return home;
}

const verifyHome = (home: string) => cloakpipe(['verify', '--home', home, '--json']);

/** Runs `edit` on the home's ledger; verify must then fail row_edited at `seq`, naming `columns`. */
function editedFails(home: string, edit: string, seq: number, columns: string): void {
  const db = new Database(join(home, 'ledger.db'));
  db.exec(edit);
  db.close();
  const r = verifyHome(home);
  assert.equal(r.status, 1, r.stdout + r.stderr);
  const failure = JSON.parse(r.stdout).failure;
  assert.deepEqual([failure.code, failure.seq], ['row_edited', seq], r.stdout);
  assert.match(failure.detail, new RegExp(`its ${columns} columns? differs? from the signed entry`));
}

test('a home: a row whose kind, ts or hash column was edited fails verify, named', () => {
  for (const [edit, seq, columns] of [
    [`UPDATE entries SET kind = 'decision' WHERE seq = 10`, 10, 'kind'],
    [`UPDATE entries SET ts = '2020-01-01T00:00:00.000Z', hash = 'sha256:' || hex(zeroblob(32)) WHERE seq = 3`, 3, 'ts, hash'],
  ] as const) {
    const home = homeWithEpoch();
    assert.equal(verifyHome(home).status, 0, 'untouched, it verifies');
    editedFails(home, edit, seq, columns);
  }
});

test("a home longer than verify's inline head: an edited row deep in the ledger fails verify, named", { timeout: 120_000 }, () => {
  // Past 2048 entries verify's workers read their own row ranges, the columns with the bodies.
  const home = homeWithEpoch(2000, 1000);
  assert.equal(verifyHome(home).status, 0, 'untouched, it verifies');
  for (const [edit, seq, columns] of [
    [`UPDATE entries SET hash = 'sha256:' || hex(zeroblob(32)) WHERE seq = 2900`, 2900, 'hash'],
    [`UPDATE entries SET kind = 'decision' WHERE seq = 2000`, 2000, 'kind'],
  ] as const)
    editedFails(home, edit, seq, columns); // the second keeps the first: the first edited row is named
});

test('a fleet chain: a row whose ts column was edited fails verify --store, named', { ...pgSkip, timeout: 120_000 }, async () => {
  const { url } = await bigChain(30);
  const ok = cloakpipe(['verify', '--store', url, '--gate', 'gate-big']);
  assert.equal(ok.status, 0, ok.stdout + ok.stderr);
  await sql(url, `UPDATE cloakpipe.entries SET ts = '2020-01-01T00:00:00.000Z' WHERE gate_id = 'gate-big' AND seq = 7`);
  const r = cloakpipe(['verify', '--store', url, '--gate', 'gate-big']);
  assert.equal(r.status, 1, r.stdout + r.stderr);
  assert.match(r.stdout, /gate gate-big: ledger INVALID at seq 7 \(row_edited\): the row of entry 7 was edited outside the gate: its ts column differs from the signed entry/);
});
