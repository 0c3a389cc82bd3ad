// verify --store reads a fleet chain in a bounded heap, as verify of an export does: a chain
// larger than the heap verifies (it was read whole into memory, and the command ran out of heap).
// A real signed chain (the production Ledger), stored in a real PostgreSQL as a gate's rows.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import pg from 'pg';
import { ROOT } from '../helpers/cli.js';
import { pgSkip } from '../store/postgres/pg.js';
import { freshDatabase, initGate, sql } from '../helpers/fleet.js';
import { fixture } from '../ledger/epoch-fixture.js';

test('verify --store: a chain larger than the heap verifies', { ...pgSkip, timeout: 300_000 }, async () => {
  const url = await freshDatabase();
  initGate(url, 'gate-init'); // the schema
  const f = fixture();
  f.add(40_000);
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
  assert.ok(bytes > 16 * 1024 * 1024, `the chain (${bytes} bytes) is larger than the heap`);
  const r = spawnSync(process.execPath, ['--max-old-space-size=16', join(ROOT, 'dist/src/cli/main.js'), 'verify', '--store', url, '--gate', 'gate-big', '--workers', '0'], {
    encoding: 'utf8',
    timeout: 240_000,
  });
  assert.equal(r.status, 0, r.stdout + r.stderr.slice(-2000));
  assert.match(r.stdout, /ledger verified: 40000 entries/);
});
