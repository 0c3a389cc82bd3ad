// ledger export --all writes every registered gate's chain. A registration written around init
// (a key that is not an Ed25519 public key, a name that is no gate id) is that gate's failure,
// named beside it; every other gate is still exported, and the command exits 1. Before, the
// first such row stopped the whole export with exit 2, and the gates after it were never written.
// A skipped gate's earlier export in the folder is renamed NAME.jsonl.stale: it was left as it
// was, beside the new files, and an auditor read it as this export's.
// Through the real binary, on PostgreSQL.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { cloakpipe, tempDir } from '../helpers/cli.js';
import { pgSkip } from '../store/postgres/pg.js';
import { freshDatabase, initGate, sql } from '../helpers/fleet.js';

test('ledger export --all: a forged registration is named and skipped, every other gate is exported', pgSkip, async () => {
  const url = await freshDatabase();
  const homeA = initGate(url, 'gate-a');
  const homeZ = initGate(url, 'gate-z');
  const rsa = () => generateKeyPairSync('rsa', { modulusLength: 2048 }).publicKey.export({ type: 'spki', format: 'pem' }) as string;
  initGate(url, 'gate-b');
  const out = join(tempDir('cloakpipe-export-forged-'), 'all');
  const earlier = cloakpipe(['ledger', 'export', '--all', '--store', url, '--out', out]);
  assert.equal(earlier.status, 0, earlier.stdout + earlier.stderr);
  const before = readFileSync(join(out, 'gate-b.jsonl'), 'utf8');
  // Registrations forged since (gate-b's key replaced): gate-b's earlier export must not pass for this one's.
  await sql(url, `UPDATE cloakpipe.gates SET public_key = 'not a key' WHERE gate_id = 'gate-b'`);
  await sql(url, 'INSERT INTO cloakpipe.gates (gate_id, public_key) VALUES ($1, $2), ($3, $4)', ['gate-c', rsa(), '../gate-d', rsa()]);

  const text = cloakpipe(['ledger', 'export', '--all', '--store', url, '--out', out]);
  assert.equal(text.status, 1, text.stdout + text.stderr);
  const stale = join(out, 'gate-b.jsonl.stale');
  assert.match(text.stdout, new RegExp(`^gate gate-b: not exported: the key registered for it in the store is not a public key; its earlier export is now ${stale.replace(/[.]/g, '[.]')}$`, 'm'));
  assert.equal(readFileSync(stale, 'utf8'), before, 'kept as it was, under a name no one takes for this export');
  assert.match(text.stdout, /^gate gate-c: not exported: the key registered for it in the store is not an Ed25519 public key$/m);
  assert.match(text.stdout, /^gate "\.\.\/gate-d": not exported: its name in the store is not a valid gate id$/m);
  assert.deepEqual(readdirSync(out).sort(), ['gate-a.jsonl', 'gate-b.jsonl.stale', 'gate-z.jsonl']);
  assert.equal(existsSync(join(out, '..', 'gate-d.jsonl')), false);
  for (const [gate, home] of [['gate-a', homeA], ['gate-z', homeZ]]) {
    const v = cloakpipe(['verify', '--ledger', join(out, `${gate}.jsonl`), '--public-key', join(home, 'gate.pub'), '--allow-empty']);
    assert.equal(v.status, 0, `${gate}: ${v.stdout}${v.stderr}`);
  }

  const json = cloakpipe(['ledger', 'export', '--all', '--json', '--store', url, '--out', join(out, '..', 'json')]);
  assert.equal(json.status, 1, json.stdout + json.stderr);
  const rows = json.stdout.trim().split('\n').map((l) => JSON.parse(l) as { gate: string; out?: string; error?: string });
  assert.deepEqual(
    rows.map((r) => [r.gate, r.out !== undefined, r.error ?? null]).sort((x, y) => (String(x[0]) < String(y[0]) ? -1 : 1)),
    [
      ['../gate-d', false, 'its name in the store is not a valid gate id'],
      ['gate-a', true, null],
      ['gate-b', false, 'the key registered for it in the store is not a public key'],
      ['gate-c', false, 'the key registered for it in the store is not an Ed25519 public key'],
      ['gate-z', true, null],
    ],
  );

  // One chain named with --gate: its forged key stays a refusal of the command.
  const one = cloakpipe(['ledger', 'export', '--store', url, '--gate', 'gate-c', '--out', join(out, '..', 'c.jsonl')]);
  assert.equal(one.status, 2, one.stdout + one.stderr);
  assert.match(one.stderr, /key registered for gate "gate-c" is not an Ed25519 public key/);
});
