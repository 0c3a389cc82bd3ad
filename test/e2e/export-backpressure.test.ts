// ledger export --out /dev/stdout into a pipe whose reader pauses: the export waits for the reader
// instead of reading the rest of the ledger into its own memory (it held all of it: a 190 MB
// export grew the process past 190 MB). The real binary, a pipe, a ledger larger than the bound.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { CLI, makeHome } from '../helpers/cli.js';
import { readBytes, rss, untilReadingStops } from '../helpers/proc-figures.js';

const ANCHORS = 12_000;
const TOKEN = 'A'.repeat(16 * 1024);
const EXPORT_BYTES = ANCHORS * TOKEN.length; // at least

test('a reader that pauses: the export waits, its memory bounded, and then delivers every line', { timeout: 300_000 }, async () => {
  const home = makeHome();
  const db = new Database(join(home, 'ledger.db'));
  db.prepare(
    `WITH RECURSIVE n(e) AS (SELECT 1 UNION ALL SELECT e + 1 FROM n WHERE e < ${ANCHORS})
     INSERT INTO anchors (epoch_seq, kind, data) SELECT e, 'rfc3161', json_object('epoch', e, 'kind', 'rfc3161', 'token', ?) FROM n`,
  ).run(TOKEN);
  db.close();

  const child = spawn(process.execPath, [CLI, 'ledger', 'export', '--home', home, '--out', '/dev/stdout'], { stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = once(child, 'exit');
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => void (stderr += d));
  child.stdout!.pause(); // the reader stops reading before the first byte
  try {
    // Once the export stops reading its ledger (it waits for the reader, or holds all of it).
    await untilReadingStops(child.pid!, readBytes(child.pid!), 2 * EXPORT_BYTES);
    const held = rss(child.pid!);
    assert.ok(held < EXPORT_BYTES / 2, `the export holds ${held >> 20} MiB for a reader that pauses (the export is ${EXPORT_BYTES >> 20} MiB)`);
  } finally {
    child.stdout!.resume();
  }
  let lines = 0;
  let tail = '';
  child.stdout!.on('data', (d: Buffer) => {
    const s = tail + d.toString('latin1');
    const parts = s.split('\n');
    tail = parts.pop()!;
    lines += parts.length;
  });
  const [code] = await exited;
  assert.equal(code, 0, stderr);
  assert.equal(tail, '');
  assert.equal(lines, 1 + ANCHORS, 'the header and every anchor');
  assert.match(stderr, new RegExp(`exported 0 entries and ${ANCHORS} anchors to /dev/stdout`));
});
