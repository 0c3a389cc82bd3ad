// ledger export --all writes every registered gate's chain. A registration written around init
// (a key that is not an Ed25519 public key, a name that is no gate id) is that gate's failure,
// named beside it; every other gate is still exported, and the command exits 1. Before, the
// first such row stopped the whole export with exit 2, and the gates after it were never written.
// Through the real binary, on PostgreSQL.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { cloakpipe, tempDir } from '../helpers/cli.js';
import { pgSkip } from '../store/postgres/pg.js';
import { freshDatabase, initGate, sql } from '../helpers/fleet.js';

test('ledger export --all: a forged registration is named and skipped, every other gate is exported', pgSkip, async () => {
  const url = await freshDatabase();
  const homeA = initGate(url, 'gate-a');
  const homeZ = initGate(url, 'gate-z');
  const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 }).publicKey.export({ type: 'spki', format: 'pem' }) as string;
  await sql(url, 'INSERT INTO cloakpipe.gates (gate_id, public_key) VALUES ($1, $2), ($3, $4), ($5, $6)', ['gate-b', 'not a key', 'gate-c', rsa, '../gate-d', rsa]);

  const out = join(tempDir('cloakpipe-export-forged-'), 'all');
  const text = cloakpipe(['ledger', 'export', '--all', '--store', url, '--out', out]);
  assert.equal(text.status, 1, text.stdout + text.stderr);
  assert.match(text.stdout, /^gate gate-b: not exported: the key registered for it in the store is not a public key$/m);
  assert.match(text.stdout, /^gate gate-c: not exported: the key registered for it in the store is not an Ed25519 public key$/m);
  assert.match(text.stdout, /^gate "\.\.\/gate-d": not exported: its name in the store is not a valid gate id$/m);
  assert.deepEqual(readdirSync(out).sort(), ['gate-a.jsonl', 'gate-z.jsonl']);
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
