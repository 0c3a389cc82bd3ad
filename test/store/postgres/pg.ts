// The test PostgreSQL: CLOAKPIPE_TEST_PG (scripts/postgres.sh start prints it; .ci/run and
// scripts/test.sh export it). In CI (CI=true) a missing PostgreSQL fails the suite; elsewhere
// the PostgreSQL tests skip, loudly.
import { randomBytes } from 'node:crypto';
import pg from 'pg';

export const PG_URL = process.env.CLOAKPIPE_TEST_PG ?? '';

if (!PG_URL) {
  if (process.env.CI === 'true') throw new Error('CLOAKPIPE_TEST_PG is not set: in CI the PostgreSQL suites must run (scripts/postgres.sh start)');
  process.stderr.write('\n#### WARNING: CLOAKPIPE_TEST_PG is not set: PostgreSQL tests SKIP (run: export CLOAKPIPE_TEST_PG=$(scripts/postgres.sh start)) ####\n\n');
}

/** `{ skip }` for node:test when no PostgreSQL is configured (never in CI). */
export const pgSkip = PG_URL ? {} : { skip: 'no PostgreSQL (CLOAKPIPE_TEST_PG unset)' };

/** A new, empty schema name for one test. */
export function freshSchema(): string {
  return `t_${randomBytes(6).toString('hex')}`;
}

export async function dropSchema(schema: string): Promise<void> {
  const c = new pg.Client({ connectionString: PG_URL });
  await c.connect();
  try {
    await c.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  } finally {
    await c.end();
  }
}
