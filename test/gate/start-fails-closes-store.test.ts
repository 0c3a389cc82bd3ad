// A gate whose start-up entry cannot be written ends by itself, exit 2, naming why, nothing
// spawned or recorded: a supervisor must never see a gate that neither runs nor exits. Real
// binary, real PostgreSQL: the database refuses every new entry (a trigger, as a database policy
// or a write-refusing proxy would).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EVERYTHING, cloakpipe, fixtureFiles } from '../helpers/cli.js';
import { MANIFEST } from '../helpers/everything-session.js';
import { freshDatabase, initGate, sql } from '../helpers/fleet.js';
import { pgSkip } from '../store/postgres/pg.js';

test('a start-up entry the store refuses: "cannot start", exit 2, the process ends by itself, nothing recorded', { ...pgSkip, timeout: 120_000 }, async () => {
  const url = await freshDatabase();
  const home = initGate(url, 'gate-refused');
  const f = fixtureFiles('cloakpipe-start-fails-', { manifest: MANIFEST, home });
  await sql(url, `CREATE FUNCTION cloakpipe.refuse_entries() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'no new entries'; END $$`);
  await sql(url, `CREATE TRIGGER refuse BEFORE INSERT ON cloakpipe.entries FOR EACH ROW EXECUTE FUNCTION cloakpipe.refuse_entries()`);
  const r = cloakpipe(['mcp-proxy', '--home', home, '--store', url, '--manifest', f.manifest, '--policy', f.policy, '--', process.execPath, EVERYTHING, 'stdio'], { input: '', timeout: 60_000 });
  assert.equal(r.signal, null, `the gate did not end by itself within 60 s: ${r.stderr}`);
  assert.equal(r.status, 2, r.stderr);
  assert.match(r.stderr, /cloakpipe mcp-proxy: cannot start: store unavailable: PostgreSQL error P0001/);
  assert.deepEqual(await sql(url, `SELECT count(*)::int AS n FROM cloakpipe.entries`), [{ n: 0 }], 'nothing recorded');
});
