// A fleet of gates on one PostgreSQL database for the end-to-end tests: a fresh database per
// test (dropped after the file), gate homes registered in it with `cloakpipe init --store`, and
// direct SQL for what a test inspects or tampers with.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { after } from 'node:test';
import pg from 'pg';
import { cloakpipe, tempDir } from './cli.js';
import { PG_URL } from '../store/postgres/pg.js';

/** scripts/postgres.sh: a cluster of a test's own, to stop and start under running gates. */
export const PG_SCRIPT = join(process.cwd(), 'scripts', 'postgres.sh');

const made: { base: string; db: string }[] = [];
after(async () => {
  for (const { base, db } of made) {
    const c = new pg.Client({ connectionString: base });
    try {
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`);
    } catch {
      // the test's own cluster may be gone already
    } finally {
      await c.end().catch(() => undefined);
    }
  }
});

/** A new database on the test PostgreSQL (or on `base`), dropped after the file. */
export async function freshDatabase(base = PG_URL): Promise<string> {
  const db = `fleet_${randomBytes(5).toString('hex')}`;
  const c = new pg.Client({ connectionString: base });
  await c.connect();
  await c.query(`CREATE DATABASE ${db}`);
  await c.end();
  made.push({ base, db });
  const u = new URL(base);
  u.pathname = `/${db}`;
  return u.toString();
}

/** A gate home registered in the store as `name`. */
export function initGate(url: string, name: string): string {
  const home = join(tempDir('cloakpipe-fleet-'), 'home');
  const r = cloakpipe(['init', '--home', home, '--store', url, '--gate-id', name]);
  assert.equal(r.status, 0, r.stderr);
  return home;
}

/** One SQL statement on the store (inspection, or tampering as an attacker with write access). */
export async function sql<R extends pg.QueryResultRow = Record<string, any>>(url: string, text: string, params: unknown[] = []): Promise<R[]> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query<R>(text, params)).rows;
  } finally {
    await c.end();
  }
}
