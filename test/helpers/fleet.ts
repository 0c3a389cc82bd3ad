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
import { fixture } from '../ledger/epoch-fixture.js';

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

/**
 * A store (a fresh database) holding gate-big's chain of `n` entries signed by the production
 * Ledger, stored as that gate's rows; `bytes`: the bodies' total size.
 */
export async function bigChain(n: number): Promise<{ url: string; bytes: number }> {
  const url = await freshDatabase();
  initGate(url, 'gate-init'); // the schema
  const f = fixture();
  f.add(n);
  const pem = f.key.publicKey.export({ type: 'spki', format: 'pem' }) as string;
  await sql(url, `INSERT INTO cloakpipe.gates (gate_id, public_key) VALUES ('gate-big', $1)`, [pem]);
  const rows = f.db.prepare('SELECT seq, ts, kind, hash, body FROM entries ORDER BY seq').all() as { seq: number; ts: string; kind: string; hash: string; body: string }[];
  f.db.close();
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  let bytes = 0;
  try {
    for (let i = 0; i < rows.length; i += 5000) {
      const page = rows.slice(i, i + 5000);
      bytes += page.reduce((n, r) => n + r.body.length, 0);
      await c.query(
        `INSERT INTO cloakpipe.entries (gate_id, seq, ts, kind, hash, body) SELECT 'gate-big', * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[])`,
        [page.map((r) => r.seq), page.map((r) => r.ts), page.map((r) => r.kind), page.map((r) => r.hash), page.map((r) => r.body)],
      );
    }
  } finally {
    await c.end();
  }
  return { url, bytes };
}
