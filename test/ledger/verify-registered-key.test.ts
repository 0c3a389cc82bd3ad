// verify --store checks every chain against the key registered for it. A registration written
// around init whose key is not an Ed25519 public key is that chain's failure (key_invalid), named
// beside its gate; the other chains are still checked and reported. Before, the whole command
// stopped with exit 2 'the gate public key is not a public key', naming no gate and checking none.
// Through the real binary, on PostgreSQL.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { cloakpipe } from '../helpers/cli.js';
import { pgSkip } from '../store/postgres/pg.js';
import { freshDatabase, initGate, sql } from '../helpers/fleet.js';

test('verify --store: a gate registered with a key that is not an Ed25519 public key fails key_invalid, and every other chain is still checked', pgSkip, async () => {
  const url = await freshDatabase();
  initGate(url, 'gate-a');
  const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 }).publicKey.export({ type: 'spki', format: 'pem' }) as string;
  await sql(url, 'INSERT INTO cloakpipe.gates (gate_id, public_key) VALUES ($1, $2), ($3, $4)', ['gate-b', 'not a key', 'gate-c', rsa]);

  const text = cloakpipe(['verify', '--store', url, '--allow-empty']);
  assert.equal(text.status, 1, text.stdout + text.stderr);
  assert.match(text.stdout, /^gate gate-a: ledger verified: 0 entries/m);
  assert.match(text.stdout, /^gate gate-b: ledger INVALID \(key_invalid\): the key registered for this gate in the store is not a public key$/m);
  assert.match(text.stdout, /^gate gate-c: ledger INVALID \(key_invalid\): the key registered for this gate in the store is not an Ed25519 public key$/m);

  const json = cloakpipe(['verify', '--store', url, '--allow-empty', '--json']);
  assert.equal(json.status, 1, json.stdout + json.stderr);
  const r = JSON.parse(json.stdout) as { ok: boolean; gates: { gate: string; ok: boolean; failure: { code: string } | null }[] };
  assert.deepEqual(
    r.gates.map((g) => [g.gate, g.ok, g.failure?.code ?? null]),
    [
      ['gate-a', true, null],
      ['gate-b', false, 'key_invalid'],
      ['gate-c', false, 'key_invalid'],
    ],
  );

  // One chain named with --gate: the same verdict; a key the auditor gives stays a usage error.
  const one = cloakpipe(['verify', '--store', url, '--gate', 'gate-b']);
  assert.equal(one.status, 1, one.stdout + one.stderr);
  assert.match(one.stdout, /ledger INVALID \(key_invalid\)/);
});
