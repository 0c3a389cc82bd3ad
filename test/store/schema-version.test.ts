// A home or fleet store whose schema is newer than this cloakpipe, or of a version it does not
// know, is refused at once with a clear message by the gate and by every reading command: never
// migrated down, written to, or read half (a newer schema may mean something else by the same
// tables). Through the real binary, on a home's SQLite files and on PostgreSQL.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { EVERYTHING, cloakpipe, fixtureFiles, makeHome } from '../helpers/cli.js';
import { MANIFEST } from '../helpers/everything-session.js';
import { freshDatabase, initGate, sql } from '../helpers/fleet.js';
import { pgSkip } from './postgres/pg.js';

const SQLITE = { env: { ...process.env, CLOAKPIPE_STORE: '' } };
const digest = (path: string) => createHash('sha256').update(readFileSync(path)).digest('hex');

function userVersion(path: string, set?: number): number {
  const db = new Database(path);
  try {
    if (set !== undefined) db.pragma(`user_version = ${set}`);
    return db.pragma('user_version', { simple: true }) as number;
  } finally {
    db.close();
  }
}

function gate(home: string, store: string[] = []) {
  const f = fixtureFiles('cloakpipe-schema-version-', { manifest: MANIFEST, home });
  return cloakpipe(['mcp-proxy', '--home', home, ...store, '--manifest', f.manifest, '--policy', f.policy, '--', process.execPath, EVERYTHING, 'stdio'], {
    input: '',
    timeout: 60_000,
    ...(store.length ? {} : SQLITE),
  });
}

test('init stamps both SQLite files with the schema version this cloakpipe writes', () => {
  const home = makeHome();
  assert.equal(userVersion(join(home, 'ledger.db')), 1);
  assert.equal(userVersion(join(home, 'operations.db')), 1);
});

for (const [file, version, why] of [
  ['ledger.db', 2, /ledger database .*ledger\.db is at schema version 2, newer than this cloakpipe \(1\): upgrade cloakpipe/],
  ['operations.db', 7, /operations database .*operations\.db is at schema version 7, newer than this cloakpipe \(1\): upgrade cloakpipe/],
  ['ledger.db', -1, /ledger database .*ledger\.db has schema version -1, which no cloakpipe writes/],
] as const) {
  test(`a home whose ${file} is at schema version ${version}: the gate, verify, ledger show and ops list refuse it, exit 2, and leave it as it was`, () => {
    const home = makeHome();
    const path = join(home, file);
    userVersion(path, version);
    const before = digest(path);
    const g = gate(home);
    assert.equal(g.status, 2, g.stderr);
    assert.match(g.stderr, why);
    for (const argv of [['verify', '--home', home, '--allow-empty'], ['ledger', 'show', '--home', home], ['ops', 'list', '--home', home]]) {
      const r = cloakpipe(argv, SQLITE);
      if (file === 'operations.db' && argv[0] !== 'ops') continue; // those read the ledger alone
      if (file === 'ledger.db' && argv[0] === 'ops') continue;
      assert.equal(r.status, 2, `${argv.join(' ')}: ${r.stdout}${r.stderr}`);
      assert.match(r.stderr, why, argv.join(' '));
    }
    assert.equal(userVersion(path), version, 'not migrated down');
    assert.equal(digest(path), before, 'the file is unchanged');
  });
}

test('a fleet schema newer than this cloakpipe, or with a version it does not know, is refused by the gate, init and every reading command', pgSkip, async () => {
  for (const [tamper, why] of [
    [`INSERT INTO cloakpipe.migrations (version) VALUES (99)`, /the PostgreSQL schema is at version 99, newer than this cloakpipe \(\d+\): upgrade cloakpipe/],
    [`DELETE FROM cloakpipe.migrations WHERE version = 2`, /the PostgreSQL schema's migrations \(1, 3, 4\) are not a version this cloakpipe knows/],
  ] as const) {
    const url = await freshDatabase();
    const home = initGate(url, 'gate-a');
    await sql(url, tamper);
    const before = await sql(url, `SELECT version FROM cloakpipe.migrations ORDER BY version`);
    const g = gate(home, ['--store', url]);
    assert.equal(g.status, 2, g.stderr);
    assert.match(g.stderr, why);
    for (const argv of [
      ['init', '--home', join(home, '..', 'other'), '--store', url, '--gate-id', 'gate-b'],
      ['verify', '--store', url, '--allow-empty'],
      ['ledger', 'export', '--all', '--store', url, '--out', join(home, '..', 'all')],
      ['ledger', 'show', '--home', home, '--store', url],
      ['ops', 'list', '--store', url],
    ]) {
      const r = cloakpipe(argv);
      assert.equal(r.status, 2, `${argv.join(' ')}: ${r.stdout}${r.stderr}`);
      assert.match(r.stderr, why, argv.join(' '));
    }
    assert.deepEqual(await sql(url, `SELECT version FROM cloakpipe.migrations ORDER BY version`), before, 'not migrated');
    assert.deepEqual(await sql(url, `SELECT gate_id FROM cloakpipe.gates`), [{ gate_id: 'gate-a' }], 'nothing registered');
  }
});
