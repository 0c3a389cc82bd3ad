// ledger export --all into a folder that holds an earlier export of a gate the store no longer
// registers: that file is renamed NAME.jsonl.stale and named, before any gate is written. It was
// left as NAME.jsonl beside the new files, exit 0 and no word of it, and an auditor reading the
// folder took it for current. A file that is not a ledger export is left alone.
// Through the real binary, on PostgreSQL.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cloakpipe, tempDir } from '../helpers/cli.js';
import { pgSkip } from '../store/postgres/pg.js';
import { freshDatabase, initGate, sql } from '../helpers/fleet.js';

test('ledger export --all: an earlier export of a gate no longer registered is renamed .stale and named', pgSkip, async () => {
  const url = await freshDatabase();
  initGate(url, 'gate-a');
  initGate(url, 'gate-b');
  const dir = tempDir('cloakpipe-export-unregistered-');
  const out = join(dir, 'all');
  const earlier = cloakpipe(['ledger', 'export', '--all', '--store', url, '--out', out]);
  assert.equal(earlier.status, 0, earlier.stdout + earlier.stderr);
  const before = readFileSync(join(out, 'gate-b.jsonl'), 'utf8');
  // Beside the exports: a file of the auditor's own, and a link to an export elsewhere (not followed).
  writeFileSync(join(out, 'notes.jsonl'), '{"note":"mine"}\n');
  writeFileSync(join(dir, 'elsewhere.jsonl'), before);
  symlinkSync(join(dir, 'elsewhere.jsonl'), join(out, 'gate-l.jsonl'));

  // gate-b is deregistered (its rows removed in the database).
  await sql(url, `DELETE FROM cloakpipe.entries WHERE gate_id = 'gate-b'`);
  await sql(url, `DELETE FROM cloakpipe.anchors WHERE gate_id = 'gate-b'`);
  await sql(url, `DELETE FROM cloakpipe.gates WHERE gate_id = 'gate-b'`);

  const text = cloakpipe(['ledger', 'export', '--all', '--store', url, '--out', out]);
  assert.equal(text.status, 0, text.stdout + text.stderr);
  const stale = join(out, 'gate-b.jsonl.stale');
  assert.match(text.stdout, new RegExp(`^gate gate-b: not registered in the store; its earlier export is now ${stale.replace(/[.]/g, '[.]')}$`, 'm'));
  assert.equal(readFileSync(stale, 'utf8'), before, 'kept as it was, under a name no one takes for current');
  assert.deepEqual(readdirSync(out).sort(), ['gate-a.jsonl', 'gate-b.jsonl.stale', 'gate-l.jsonl', 'notes.jsonl']);
  assert.equal(readFileSync(join(out, 'notes.jsonl'), 'utf8'), '{"note":"mine"}\n');

  writeFileSync(join(out, 'gate-b.jsonl'), before); // an earlier export put back
  const json = cloakpipe(['ledger', 'export', '--all', '--json', '--store', url, '--out', out]);
  assert.equal(json.status, 0, json.stdout + json.stderr);
  const rows = json.stdout.trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
  assert.deepEqual(rows.find((r) => r.gate === 'gate-b'), { gate: 'gate-b', error: 'not registered in the store', stale });
  assert.ok(rows.some((r) => r.gate === 'gate-a' && r.out === join(out, 'gate-a.jsonl')));
});

test('ledger export --all: an --out that is not a folder is a usage error naming it, nothing written', pgSkip, async () => {
  const url = await freshDatabase();
  initGate(url, 'gate-a');
  const dir = tempDir('cloakpipe-export-out-file-');
  writeFileSync(join(dir, 'a-file'), 'x');
  for (const [out, why] of [
    [join(dir, 'a-file'), 'it is not a folder'],
    [join(dir, 'a-file', 'all'), 'a part of its path is not a folder'],
    ['/dev/stdout', 'it is not a folder'],
  ]) {
    const r = cloakpipe(['ledger', 'export', '--all', '--store', url, '--out', out]);
    assert.equal(r.status, 2, r.stdout + r.stderr); // was exit 2 with 'EEXIST: file already exists, mkdir ...'
    assert.ok(r.stderr.includes(`--out ${out}: with --all it names a folder (one NAME.jsonl a gate), and ${why}`), r.stderr);
  }
  assert.deepEqual(readdirSync(dir), ['a-file']);
  assert.equal(readFileSync(join(dir, 'a-file'), 'utf8'), 'x');
});
