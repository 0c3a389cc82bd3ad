// The fleet's schema, named by the --store URL's `schema` parameter, is written into every
// statement (migrations included): it must never carry SQL, never fall back to another fleet's
// schema, never be a system schema that backups leave out, and a keyword is a name like any.
// Migration 4 (the unique gate key) killed midway leaves the store at 3, and init finishes it.
// Through the real binary, on PostgreSQL.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { CLI, cloakpipe, tempDir } from '../../helpers/cli.js';
import { freshDatabase, initGate, sql } from '../../helpers/fleet.js';
import { pgSkip } from './pg.js';

const withSchema = (url: string, schema: string) => `${url}?schema=${encodeURIComponent(schema)}`;
const init = (url: string, gate: string) => cloakpipe(['init', '--home', join(tempDir('cloakpipe-schema-'), 'home'), '--store', url, '--gate-id', gate]);
const schemas = async (url: string) => (await sql(url, `SELECT nspname FROM pg_namespace WHERE nspname NOT LIKE 'pg\\_%' ORDER BY 1`)).map((r) => r.nspname as string);

test('a schema parameter that is not a plain name is refused before any connection, nothing created', { ...pgSkip, timeout: 60_000 }, async () => {
  const url = await freshDatabase();
  const before = await schemas(url);
  for (const [schema, why] of [
    ['a;DROP SCHEMA public CASCADE', /must be 1 to 63 lower-case letters/],
    ['', /must be 1 to 63 lower-case letters/], // an unset variable: was the default schema
    ['information_schema', /is a PostgreSQL system schema/], // was written into, and left out of pg_dump
    ['pg_fleet', /is a PostgreSQL system schema/],
  ] as const) {
    const r = init(withSchema(url, schema), 'gate-a');
    assert.equal(r.status, 2, `${JSON.stringify(schema)}: ${r.stdout}${r.stderr}`);
    assert.ok(r.stderr.includes(`--store schema ${JSON.stringify(schema)} `), r.stderr);
    assert.match(r.stderr, why);
  }
  assert.deepEqual(await schemas(url), before, 'no schema created');
  assert.deepEqual(await sql(url, `SELECT table_name FROM information_schema.tables WHERE table_schema = 'information_schema' AND table_name = 'gates'`), []);
});

test('a schema named by a keyword (user) is a schema like any other', { ...pgSkip, timeout: 60_000 }, async () => {
  const url = await freshDatabase();
  const r = init(withSchema(url, 'user'), 'gate-a');
  assert.equal(r.status, 0, r.stderr); // was PostgreSQL error 42601 (a syntax error)
  assert.deepEqual(await sql(url, 'SELECT gate_id FROM "user".gates'), [{ gate_id: 'gate-a' }]);
  const shown = cloakpipe(['ledger', 'export', '--all', '--store', withSchema(url, 'user'), '--out', join(tempDir(), 'all')]);
  assert.equal(shown.status, 0, shown.stderr);
});

test('an init killed while migration 4 waits leaves the store at 3; the next init finishes it', { ...pgSkip, timeout: 120_000 }, async () => {
  const url = await freshDatabase();
  initGate(url, 'gate-first');
  await sql(url, 'DROP INDEX cloakpipe.gates_public_key'); // the store as version 3 left it
  await sql(url, 'DELETE FROM cloakpipe.migrations WHERE version = 4');
  const pg = (await import('pg')).default;
  const holder = new pg.Client({ connectionString: url });
  await holder.connect();
  try {
    await holder.query('BEGIN');
    await holder.query('LOCK TABLE cloakpipe.gates IN ACCESS EXCLUSIVE MODE'); // migration 4 waits on it
    const child = spawn(process.execPath, [CLI, 'init', '--home', join(tempDir(), 'home'), '--store', url, '--gate-id', 'gate-second'], { stdio: 'ignore' });
    const exited = once(child, 'exit');
    let waiting: { pid: number }[] = [];
    for (let i = 0; waiting.length === 0; i++) {
      assert.ok(i < 600, 'init never reached migration 4');
      await new Promise((r) => setTimeout(r, 100));
      waiting = await sql(url, `SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%gates%' AND pid <> pg_backend_pid()`);
    }
    child.kill('SIGKILL');
    await exited;
    await sql(url, 'SELECT pg_terminate_backend($1)', [waiting[0].pid]);
  } finally {
    await holder.query('ROLLBACK').catch(() => undefined);
    await holder.end();
  }
  assert.deepEqual((await sql(url, 'SELECT version FROM cloakpipe.migrations ORDER BY version')).map((r) => r.version), [1, 2, 3], 'nothing of migration 4 applied');
  assert.deepEqual((await sql(url, 'SELECT gate_id FROM cloakpipe.gates ORDER BY gate_id')).map((r) => r.gate_id), ['gate-first']);
  initGate(url, 'gate-second');
  assert.deepEqual((await sql(url, 'SELECT version FROM cloakpipe.migrations ORDER BY version')).map((r) => r.version), [1, 2, 3, 4]);
  await assert.rejects(sql(url, `INSERT INTO cloakpipe.gates (gate_id, public_key) SELECT 'gate-copy', public_key FROM cloakpipe.gates WHERE gate_id = 'gate-first'`), /gates_public_key/);
});
