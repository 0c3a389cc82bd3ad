// ops list and ops show on a fleet's PostgreSQL store read it read-only, through the real binary:
// they need no gate key (nor a home), never wait for the row lock a deciding gate holds, and
// write nothing (every transaction READ ONLY: a role that may only read serves).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { renameSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { cloakpipe, tempDir } from '../helpers/cli.js';
import { pgSkip } from '../store/postgres/pg.js';
import { freshDatabase, initGate, sql } from '../helpers/fleet.js';

const FP = 'sha256:' + 'd'.repeat(64);
const listed = (r: { stdout: string }) => r.stdout.trim().split('\n').filter(Boolean).map((l) => JSON.parse(l).id);

/** A store holding one unknown operation (its gate died), and a home registered in it. */
async function seeded(): Promise<{ url: string; home: string }> {
  const url = await freshDatabase();
  const home = initGate(url, 'gate-a');
  await sql(url, `INSERT INTO cloakpipe.operations (id, fingerprint, tool, state, attempts, note, owner, created_at, updated_at)
    VALUES ('op-unknown', $1, 'write_note', 'unknown', 1, 'timeout', NULL, '2026-11-30T08:00:00.000Z', '2026-11-30T08:00:00.000Z')`, [FP]);
  return { url, home };
}

test('ops list and show on a shared store answer while a gate holds the operation\'s row lock', pgSkip, async () => {
  const { url, home } = await seeded();
  // What a gate deciding on this operation holds until it commits.
  const gate = new pg.Client({ connectionString: url });
  await gate.connect();
  try {
    await gate.query('BEGIN');
    await gate.query(`SELECT * FROM cloakpipe.operations WHERE id = 'op-unknown' FOR UPDATE`);
    // A store bound (1 s) well below the test's: a reader asking for the lock fails after it.
    const store = `${url}${url.includes('?') ? '&' : '?'}timeout=1s`;
    const list = cloakpipe(['ops', 'list', '--json', '--home', home, '--store', store], { timeout: 20_000 });
    assert.equal(list.status, 0, list.stderr);
    assert.deepEqual(listed(list), ['op-unknown']);
    const show = cloakpipe(['ops', 'show', 'op-unknown', '--json', '--home', home, '--store', store], { timeout: 20_000 });
    assert.equal(show.status, 0, show.stderr);
    assert.equal(JSON.parse(show.stdout).state, 'unknown');
  } finally {
    await gate.query('ROLLBACK');
    await gate.end();
  }
});

test('ops list and show on a shared store need no gate key and no home; a role that may only read serves', pgSkip, async () => {
  const { url, home } = await seeded();
  // The key kept elsewhere (an operator who may read operations but not sign).
  renameSync(join(home, 'gate.key'), join(home, '..', 'gate.key.apart'));
  for (const where of [['--home', home], ['--home', join(tempDir(), 'no-home')]]) {
    const list = cloakpipe(['ops', 'list', '--json', ...where, '--store', url]);
    assert.equal(list.status, 0, list.stderr);
    assert.deepEqual(listed(list), ['op-unknown']);
    const show = cloakpipe(['ops', 'show', 'op-unknown', '--json', ...where, '--store', url]);
    assert.equal(show.status, 0, show.stderr);
    assert.equal(JSON.parse(show.stdout).fingerprint, FP);
  }
  // An auditor's role with SELECT only: no write, no lock asked for.
  const role = `reader_${Math.random().toString(36).slice(2, 8)}`;
  await sql(url, `CREATE ROLE ${role} LOGIN`);
  await sql(url, `GRANT USAGE ON SCHEMA cloakpipe TO ${role}; GRANT SELECT ON ALL TABLES IN SCHEMA cloakpipe TO ${role}`);
  try {
    const u = new URL(url);
    u.username = role;
    const show = cloakpipe(['ops', 'show', 'op-unknown', '--json', '--store', u.toString()]);
    assert.equal(show.status, 0, show.stderr);
    assert.equal(JSON.parse(show.stdout).state, 'unknown');
    const missing = cloakpipe(['ops', 'show', 'op-never', '--store', u.toString()]);
    assert.equal(missing.status, 1, missing.stderr);
  } finally {
    await sql(url, `DROP OWNED BY ${role}; DROP ROLE ${role}`);
  }
});

test('ops list on a database without the schema is an error naming it, and creates nothing', pgSkip, async () => {
  const url = await freshDatabase();
  const r = cloakpipe(['ops', 'list', '--store', url]);
  assert.equal(r.status, 2, r.stdout + r.stderr);
  assert.match(r.stderr, /no cloakpipe schema/);
  assert.doesNotMatch(r.stderr, /\n\s+at /);
  assert.deepEqual(await sql(url, `SELECT 1 FROM pg_namespace WHERE nspname = 'cloakpipe'`), []);
});
