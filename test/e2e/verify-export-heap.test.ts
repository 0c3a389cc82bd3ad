// ledger export streams a chain's anchors as it streams its entries: they were read whole into
// memory (parsed, on SQLite; fetched in one query, on PostgreSQL), and a gate anchoring every
// minute holds two tokens of kilobytes an epoch, so the export of a long-running gate ran out of
// heap. The real binary under a 16 MiB heap, anchors larger than it, a home's ledger and a fleet
// chain in a real PostgreSQL.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { CLI, makeHome, tempDir } from '../helpers/cli.js';
import { pgSkip } from '../store/postgres/pg.js';
import { bigChain } from '../helpers/fleet.js';

const ANCHORS = 2400;
const TOKEN = randomBytes(12 * 1024).toString('base64'); // about a TSA token with its chain
const anchorRow = (epoch: number) => ({ epoch, kind: 'rfc3161', data: JSON.stringify({ epoch, kind: 'rfc3161', token: TOKEN }) });

function exportUnderSmallHeap(args: string[]): { out: string } {
  const out = join(tempDir(), 'ledger.jsonl');
  const r = spawnSync(process.execPath, ['--max-old-space-size=16', CLI, 'ledger', 'export', ...args, '--out', out], { encoding: 'utf8', timeout: 240_000 });
  assert.equal(r.status, 0, r.stdout + r.stderr.slice(-2000));
  assert.match(r.stdout, new RegExp(`and ${ANCHORS} anchors`));
  return { out };
}

/** The export's header and how many anchor lines follow its entries. */
async function anchorLines(file: string): Promise<{ header: { anchors: number; entries: number }; anchors: number }> {
  let header: { anchors: number; entries: number } | undefined;
  let n = 0;
  for await (const line of createInterface({ input: createReadStream(file) })) {
    if (!header) header = JSON.parse(line);
    else if (line.includes('"token":')) n++;
  }
  return { header: header!, anchors: n };
}

test('a home: anchors larger than the heap export', { timeout: 300_000 }, async () => {
  const home = makeHome();
  const db = new Database(join(home, 'ledger.db'));
  const put = db.prepare('INSERT INTO anchors (epoch_seq, kind, data) VALUES (@epoch, @kind, @data)');
  db.transaction(() => {
    for (let e = 1; e <= ANCHORS; e++) put.run(anchorRow(e));
  })();
  db.close();
  assert.ok(ANCHORS * TOKEN.length > 24 * 1024 * 1024, 'the anchors are larger than the heap');
  const { out } = exportUnderSmallHeap(['--home', home]);
  const r = await anchorLines(out);
  assert.equal(r.header.anchors, ANCHORS);
  assert.equal(r.anchors, ANCHORS);
});

test('a fleet chain: anchors larger than the heap export', { ...pgSkip, timeout: 300_000 }, async () => {
  const { url } = await bigChain(2_000);
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    for (let e = 1; e <= ANCHORS; e += 200) {
      const rows = Array.from({ length: Math.min(200, ANCHORS - e + 1) }, (_, i) => anchorRow(e + i));
      await c.query(`INSERT INTO cloakpipe.anchors (gate_id, epoch_seq, kind, data) SELECT 'gate-big', * FROM unnest($1::bigint[], $2::text[], $3::text[])`, [
        rows.map((r) => r.epoch),
        rows.map((r) => r.kind),
        rows.map((r) => r.data),
      ]);
    }
  } finally {
    await c.end();
  }
  const { out } = exportUnderSmallHeap(['--store', url, '--gate', 'gate-big']);
  const r = await anchorLines(out);
  assert.deepEqual([r.header.entries, r.header.anchors, r.anchors], [2_000, ANCHORS, ANCHORS]);
});
