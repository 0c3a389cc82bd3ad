// Several gates creating one fleet schema at once (fleet.md: `init` from many hosts together).
// PostgreSQL's CREATE … IF NOT EXISTS is not atomic against a concurrent create of the same name:
// it can fail with "type … already exists" (42710) or a catalog unique violation. Found by the
// fleet end-to-end test in CI; here the race is run often enough to be met every time (about one
// round in six met it before the fix, on a 2-core machine).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { dropSchema, freshSchema, PG_URL, pgSkip } from './pg.js';
import { migrate, SCHEMA_VERSION } from '../../../src/store/postgres/schema.js';

const CLIENTS = 6;
const ROUNDS = 150;

test('postgres schema: six clients migrating a new schema at once all succeed, and each migration is applied once', pgSkip, async () => {
  const clients = await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      const c = new pg.Client({ connectionString: PG_URL });
      await c.connect();
      return c;
    }),
  );
  try {
    for (let round = 0; round < ROUNDS; round++) {
      const schema = freshSchema();
      try {
        const results = await Promise.allSettled(clients.map((c) => migrate(c, schema)));
        const failed = results.flatMap((r) => (r.status === 'rejected' ? [`${(r.reason as { code?: string }).code}: ${(r.reason as Error).message}`] : []));
        assert.deepEqual(failed, [], `round ${round}: a concurrent migrate failed`);
        assert.deepEqual(
          results.map((r) => (r as PromiseFulfilledResult<number>).value),
          Array(CLIENTS).fill(SCHEMA_VERSION),
        );
        const { rows } = await clients[0].query<{ version: number }>(`SELECT version FROM ${schema}.migrations ORDER BY version`);
        assert.deepEqual(
          rows.map((r) => r.version),
          Array.from({ length: SCHEMA_VERSION }, (_, i) => i + 1),
          `round ${round}: each migration once`,
        );
      } finally {
        await dropSchema(schema);
      }
    }
  } finally {
    await Promise.all(clients.map((c) => c.end()));
  }
});
