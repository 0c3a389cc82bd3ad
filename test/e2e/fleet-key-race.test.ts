// One token key is one gate's (ADR 106), held by the store itself (ADR 110). init read the
// registered keys, then registered its own: two inits with one key and two gate ids, racing, both
// read none and both registered it. Now the store's unique index on the key refuses the second,
// whichever reads first. A store whose gates already share a key is named at its migration and
// left as it was. The real binary, a real SoftHSM key, a real PostgreSQL.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { cloakpipe, cloakpipeAsync, tempDir } from '../helpers/cli.js';
import { freshToken, hsmSkip } from '../helpers/softhsm.js';
import { pgSkip } from '../store/postgres/pg.js';
import { freshDatabase, initGate, sql } from '../helpers/fleet.js';

const gateIds = async (url: string) => (await sql(url, 'SELECT gate_id FROM cloakpipe.gates ORDER BY gate_id')).map((r) => r.gate_id as string);
const version = async (url: string) => (await sql(url, 'SELECT max(version) AS v FROM cloakpipe.migrations'))[0].v as number;

test('two inits at once with one token key and two gate ids: one registers it, the other is exit 2 and leaves no home', { ...hsmSkip, ...pgSkip, timeout: 120_000 }, async () => {
  const t = freshToken();
  const env = { ...process.env, ...t.env, CLOAKPIPE_PKCS11_PIN: t.pin };
  // The key is in the token before either init (an HSM administrator's, or an earlier home's).
  const own = cloakpipe(['init', '--home', join(tempDir(), 'own'), '--key', t.uri()], { env });
  assert.equal(own.status, 0, own.stderr);
  const url = await freshDatabase();
  initGate(url, 'gate-first'); // the schema, and a gate of another key
  // Both inits are held at the gates table until both are there: what each reads of it, and when,
  // is the same for both, as it is when two pods start together.
  const lock = new pg.Client({ connectionString: url });
  await lock.connect();
  const homes = [join(tempDir(), 'a'), join(tempDir(), 'b')];
  let runs: Promise<{ status: number | null; stdout: string; stderr: string }>[] = [];
  try {
    await lock.query('BEGIN');
    await lock.query('LOCK TABLE cloakpipe.gates IN ACCESS EXCLUSIVE MODE');
    runs = homes.map((home, i) => cloakpipeAsync(['init', '--home', home, '--store', url, '--gate-id', `gate-${'ab'[i]}`, '--key', t.uri()], env));
    for (;;) {
      const { rows } = await lock.query(`SELECT count(*)::int AS n FROM pg_locks WHERE NOT granted AND relation = 'cloakpipe.gates'::regclass`);
      if (rows[0].n === 2) break;
      await new Promise((r) => setTimeout(r, 50));
    }
  } finally {
    await lock.query('COMMIT').catch(() => undefined);
    await lock.end();
  }
  const done = await Promise.all(runs);
  const won = done.findIndex((r) => r.status === 0);
  assert.ok(won >= 0, done.map((r) => r.stderr).join('\n'));
  const lost = 1 - won;
  assert.equal(done[lost].status, 2, done[lost].stderr);
  assert.match(done[lost].stderr, new RegExp(`the gate key sha256:[0-9a-f]{64} is gate "gate-${'ab'[won]}"'s already in this store: each gate signs with a key of its own`));
  assert.equal(existsSync(homes[lost]), false, 'the refused init leaves no home');
  assert.deepEqual(await gateIds(url), ['gate-first', `gate-${'ab'[won]}`].sort());
});

test('a store at version 3 whose gates share a key is named and left at 3; once one registration is removed, init migrates it', { ...pgSkip, timeout: 60_000 }, async () => {
  const url = await freshDatabase();
  const home = initGate(url, 'gate-first');
  // A store as the previous schema left it, with a registration a racing init made then.
  await sql(url, 'DROP INDEX cloakpipe.gates_public_key');
  await sql(url, 'DELETE FROM cloakpipe.migrations WHERE version = 4');
  await sql(url, `INSERT INTO cloakpipe.gates (gate_id, public_key) SELECT 'gate-copy', public_key FROM cloakpipe.gates WHERE gate_id = 'gate-first'`);
  const refused = cloakpipe(['init', '--home', home, '--store', url, '--gate-id', 'gate-first']);
  assert.equal(refused.status, 2, refused.stderr);
  assert.match(refused.stderr, /gates "gate-copy" and "gate-first" are registered with one key: each gate signs with a key of its own/);
  assert.equal(await version(url), 3, 'the schema is left as it was');
  await sql(url, `DELETE FROM cloakpipe.gates WHERE gate_id = 'gate-copy'`);
  const migrated = cloakpipe(['init', '--home', home, '--store', url, '--gate-id', 'gate-first']);
  assert.equal(migrated.status, 0, migrated.stderr);
  assert.equal(await version(url), 4);
  await assert.rejects(sql(url, `INSERT INTO cloakpipe.gates (gate_id, public_key) SELECT 'gate-copy', public_key FROM cloakpipe.gates WHERE gate_id = 'gate-first'`), /gates_public_key/);
  const shown = cloakpipe(['ledger', 'show', '--home', home, '--store', url]);
  assert.equal(shown.status, 0, shown.stderr);
});
