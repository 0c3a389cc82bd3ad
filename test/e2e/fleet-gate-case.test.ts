// Two fleet gates whose names differ only in case (gate-a, GATE-A) are one file name in a
// case-insensitive folder (macOS, Windows): ledger export --all wrote DIR/gate-a.jsonl and then
// DIR/GATE-A.jsonl over it, one chain's export lost under the other's name. init refuses such a
// name; a store that holds a pair already (registered before) exports the first and names the
// other, exit 1, its twin's file untouched. Through the real binary, on PostgreSQL.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { cloakpipe, tempDir } from '../helpers/cli.js';
import { pgSkip } from '../store/postgres/pg.js';
import { freshDatabase, initGate, sql } from '../helpers/fleet.js';

test('init refuses a gate name that differs from a registered one only in case', { ...pgSkip, timeout: 60_000 }, async () => {
  const url = await freshDatabase();
  initGate(url, 'gate-a');
  const r = cloakpipe(['init', '--home', join(tempDir(), 'home'), '--store', url, '--gate-id', 'GATE-A']);
  assert.equal(r.status, 2, r.stdout + r.stderr);
  assert.match(r.stderr, /gate "GATE-A" differs from the registered gate "gate-a" only in case/);
  assert.deepEqual((await sql(url, 'SELECT gate_id FROM cloakpipe.gates')).map((g) => g.gate_id), ['gate-a']);
  initGate(url, 'gate-a2'); // another name still registers
});

test('ledger export --all: of two registered names that differ only in case, the second is named and not written', { ...pgSkip, timeout: 60_000 }, async () => {
  const url = await freshDatabase();
  initGate(url, 'gate-a');
  const twin = initGate(url, 'gate-twin');
  await sql(url, `UPDATE cloakpipe.gates SET gate_id = 'GATE-A' WHERE gate_id = 'gate-twin'`); // as a store registered before init refused it
  const [first, second] = (await sql(url, 'SELECT gate_id FROM cloakpipe.gates ORDER BY gate_id')).map((g) => g.gate_id as string);
  const out = join(tempDir(), 'all');
  const r = cloakpipe(['ledger', 'export', '--all', '--store', url, '--out', out]);
  assert.equal(r.status, 1, r.stdout + r.stderr);
  assert.match(r.stdout, new RegExp(`^gate ${second}: not exported: its name differs from gate ${first}'s only in case`, 'm'));
  assert.deepEqual(readdirSync(out), [`${first}.jsonl`]);
  const alone = cloakpipe(['ledger', 'export', '--store', url, '--gate', 'GATE-A', '--out', join(out, '..', 'GATE-A.jsonl')]);
  assert.equal(alone.status, 0, alone.stderr);
  const v = cloakpipe(['verify', '--ledger', join(out, '..', 'GATE-A.jsonl'), '--public-key', join(twin, 'gate.pub'), '--allow-empty']);
  assert.equal(v.status, 0, v.stdout + v.stderr);
});
