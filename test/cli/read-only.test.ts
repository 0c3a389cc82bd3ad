// The commands that read a home change nothing in it. A gate killed mid-run leaves its newest
// entries in ledger.db-wal; SQLite's last connection to close checkpoints a WAL into the
// database and deletes it, so `verify --home` run by an auditor on that home rewrote ledger.db
// (another sha256) and removed the WAL it had just read: the evidence changed under its reader.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cloakpipe, tempDir, writeFiles } from '../helpers/cli.js';
import { call, MANIFEST, setup, startGate } from '../helpers/recording-gate.js';

/** Every file of the home and its sha256. */
function files(home: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of readdirSync(home)) {
    const p = join(home, name);
    if (statSync(p).isFile()) out[name] = createHash('sha256').update(readFileSync(p)).digest('hex');
  }
  return out;
}

test('verify, ledger show and ledger export on a home whose gate was killed read its WAL and leave every file as it was', async () => {
  const s = setup();
  const g = await startGate(s, { delayMs: 0 });
  for (let i = 0; i < 5; i++) assert.equal((await call(g, 'write_note', { text: `note ${i}`, key: `k-${i}` })).ok, true);
  process.kill(g.pid, 'SIGKILL');
  await g.close();
  assert.ok(existsSync(join(s.home, 'ledger.db-wal')) && statSync(join(s.home, 'ledger.db-wal')).size > 0, 'the killed gate left its WAL');
  const before = files(s.home);

  const verify = cloakpipe(['verify', '--home', s.home]);
  assert.equal(verify.status, 0, verify.stderr);
  const show = cloakpipe(['ledger', 'show', '--json', '--home', s.home]);
  assert.equal(show.status, 0, show.stderr);
  const entries = show.stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l));
  // What only the WAL held was read: the five calls' decisions are there.
  assert.equal(entries.filter((e) => e.kind === 'decision' && e.tool === 'write_note').length, 5);
  assert.match(verify.stdout, new RegExp(`ledger verified: ${entries.length} entries`));
  const out = join(tempDir(), 'export.jsonl');
  const exported = cloakpipe(['ledger', 'export', '--home', s.home, '--out', out]);
  assert.equal(exported.status, 0, exported.stderr);

  // The shared-memory index is SQLite's scratch file, rebuilt from the WAL by any reader.
  const after = files(s.home);
  delete before['ledger.db-shm'];
  delete after['ledger.db-shm'];
  assert.deepEqual(after, before);
});

test('ops list, scope report and verify on a closed home leave no -wal or -shm behind and every file as it was', async () => {
  const s = setup();
  const g = await startGate(s, { delayMs: 0 });
  assert.equal((await call(g, 'write_note', { text: 'note', key: 'k-1' })).ok, true);
  await g.close(); // a clean exit: SQLite checkpointed and deleted the gate's WAL
  const before = files(s.home);
  assert.deepEqual(Object.keys(before).filter((n) => /-(wal|shm)$/.test(n)), [], 'the closed home holds no WAL');

  const ops = cloakpipe(['ops', 'list', '--home', s.home]);
  assert.equal(ops.status, 0, ops.stderr);
  assert.match(ops.stdout, /write_note/);
  const scope = writeFiles({
    's.yaml': `${MANIFEST}effects:\n  notes:\n    description: notes are written\n    paths:\n      - id: gateway\n        kind: agent\n        description: through the gate\n        route: { via: gate, tool: write_note }\n        mediator: { type: gate }\n`,
  });
  const report = cloakpipe(['scope', 'report', '--manifest', scope['s.yaml'], '--home', s.home, '--json']);
  assert.ok(report.status === 0 || report.status === 1, report.stderr);
  assert.equal(JSON.parse(report.stdout).ledger.verified, true);
  const verify = cloakpipe(['verify', '--home', s.home]);
  assert.equal(verify.status, 0, verify.stderr);

  assert.deepEqual(files(s.home), before);
});

test('an empty -wal a reader ended by a signal left on a closed home is gone after the next read, with its -shm', async () => {
  const s = setup();
  const g = await startGate(s, { delayMs: 0 });
  assert.equal((await call(g, 'write_note', { text: 'note', key: 'k-1' })).ok, true);
  await g.close();
  const before = files(s.home);
  // What a read killed before it closed leaves: SQLite's empty WAL (its index, rebuilt by any reader, aside).
  for (const db of ['ledger.db', 'operations.db']) writeFileSync(join(s.home, `${db}-wal`), '');
  const ops = cloakpipe(['ops', 'list', '--home', s.home]);
  assert.equal(ops.status, 0, ops.stderr);
  const verify = cloakpipe(['verify', '--home', s.home]);
  assert.equal(verify.status, 0, verify.stderr);
  assert.deepEqual(files(s.home), before);
});
