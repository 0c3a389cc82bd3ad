// ops list and ops show read a home's operations read-only, through the real binary: they
// answer while a running gate holds the store's write lock, need no gate key, never create or
// change a file, and a missing store is an error, not a new database.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, renameSync, statSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { cloakpipe, makeHome } from '../helpers/cli.js';
import { Operations } from '../../src/operations/operations.js';
import { openHome } from '../../src/home/open.js';
import { call, setup, startGate } from '../helpers/recording-gate.js';

const FP = 'sha256:' + 'd'.repeat(64);

/** A home with one unknown operation (its gate died). */
function seeded(): string {
  const home = makeHome();
  const h = openHome({ home });
  const s = new Operations(h.store.operations, 'some-host/1/dead');
  s.begin('op-unknown', FP, 'write_note', Date.now());
  s.fail('op-unknown', 1, 'timeout', Date.now());
  h.close();
  return home;
}

const listed = (r: { stdout: string }) => r.stdout.trim().split('\n').filter(Boolean).map((l) => JSON.parse(l).id);

test('ops list and show answer while a gate holds the write lock of the store', () => {
  const home = seeded();
  // What a running gate holds in the middle of a decision's transaction.
  const gate = new Database(join(home, 'operations.db'));
  try {
    gate.exec('BEGIN IMMEDIATE');
    gate.exec("UPDATE operations SET note = note WHERE id = 'op-unknown'");
    // Bounded below the store's 10 s busy wait: a reader that asks for the write lock fails or hangs here.
    const list = cloakpipe(['ops', 'list', '--json', '--home', home], { timeout: 8_000 });
    assert.equal(list.status, 0, list.stderr);
    assert.deepEqual(listed(list), ['op-unknown']);
    const show = cloakpipe(['ops', 'show', 'op-unknown', '--json', '--home', home], { timeout: 8_000 });
    assert.equal(show.status, 0, show.stderr);
    assert.equal(JSON.parse(show.stdout).state, 'unknown');
  } finally {
    gate.exec('ROLLBACK');
    gate.close();
  }
});

/** Every file of the home and its sha256, but SQLite's shared-memory index (scratch, rebuilt by any reader). */
function files(home: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of readdirSync(home)) {
    const p = join(home, name);
    if (statSync(p).isFile() && !name.endsWith('-shm')) out[name] = createHash('sha256').update(readFileSync(p)).digest('hex');
  }
  return out;
}

test('ops list and show on a home whose gate was killed read its WAL, need no gate key and leave every file as it was', async () => {
  const s = setup();
  const g = await startGate(s, { delayMs: 0 });
  for (let i = 0; i < 3; i++) assert.equal((await call(g, 'write_note', { text: `note ${i}`, key: `k-${i}` })).ok, true);
  process.kill(g.pid, 'SIGKILL');
  await g.close();
  assert.ok(statSync(join(s.home, 'operations.db-wal')).size > 0, 'the killed gate left its WAL');
  // The key kept elsewhere (an operator who may read operations but not sign).
  renameSync(join(s.home, 'gate.key'), join(s.home, '..', 'gate.key.apart'));
  const before = files(s.home);
  const list = cloakpipe(['ops', 'list', '--json', '--home', s.home]);
  assert.equal(list.status, 0, list.stderr);
  const ids = listed(list);
  assert.equal(ids.length, 3, 'what only the WAL held was read');
  const show = cloakpipe(['ops', 'show', ids[0], '--home', s.home]);
  assert.equal(show.status, 0, show.stderr);
  // A read-write open checkpointed the WAL into operations.db and deleted it on close.
  assert.deepEqual(files(s.home), before);
});

test('a missing or foreign operations store is an error naming it, never a new database', () => {
  const home = seeded();
  renameSync(join(home, 'operations.db'), join(home, '..', 'operations.db.moved'));
  for (const args of [['ops', 'list'], ['ops', 'show', 'op-unknown']]) {
    const r = cloakpipe([...args, '--home', home]);
    assert.equal(r.status, 2, r.stdout + r.stderr);
    assert.match(r.stderr, /operations\.db/);
    assert.doesNotMatch(r.stderr, /\n\s+at /);
    assert.equal(existsSync(join(home, 'operations.db')), false, 'not created');
  }
  // The ledger database in its place: a file without the operations table.
  renameSync(join(home, 'ledger.db'), join(home, 'operations.db'));
  const foreign = cloakpipe(['ops', 'list', '--home', home]);
  assert.equal(foreign.status, 2, foreign.stdout + foreign.stderr);
  assert.match(foreign.stderr, /does not hold the gate's schema/);
});

test('ops list and show print a stored value without its escape sequences', () => {
  const home = seeded();
  const db = new Database(join(home, 'operations.db'));
  db.prepare("UPDATE operations SET tool = ?, updated_at = ? WHERE id = 'op-unknown'").run('write_note\u001b[2K\r', '2026\u001b]0;owned\u0007');
  db.close();
  for (const args of [['ops', 'list'], ['ops', 'show', 'op-unknown']]) {
    const r = cloakpipe([...args, '--home', home]);
    assert.equal(r.status, 0, r.stderr);
    assert.doesNotMatch(r.stdout, /[\u001b\u0007\r]/, `${args[1]}: no raw control character reaches the terminal`);
    assert.match(r.stdout, /write_note\\u001b\[2K\\u000d/);
  }
});
