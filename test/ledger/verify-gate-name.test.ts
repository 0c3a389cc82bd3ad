// verify --store prints each gate's name beside its verdict. A name is a row of the store: one
// written around init (whoever can write the database) may hold an escape sequence that hides
// or rewrites the verdict on the auditor's terminal. Through the real binary, on PostgreSQL.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { cloakpipe } from '../helpers/cli.js';
import { pgSkip } from '../store/postgres/pg.js';
import { freshDatabase, initGate, sql } from '../helpers/fleet.js';

test('verify --store shows a gate name holding escape sequences escaped, never raw', pgSkip, async () => {
  const url = await freshDatabase();
  initGate(url, 'gate-a');
  // ESC[8m conceals what follows (the chain's INVALID verdict); U+202E reorders it.
  const name = 'gate-z\u001b[8m\u202e';
  await sql(url, 'INSERT INTO cloakpipe.gates (gate_id, public_key) VALUES ($1, $2)', [name, generateKeyPairSync('ed25519').publicKey.export({ type: 'spki', format: 'pem' })]);
  const r = cloakpipe(['verify', '--store', url, '--allow-empty']);
  assert.equal(r.status, 0, r.stdout + r.stderr);
  for (const out of [r.stdout, r.stderr]) assert.doesNotMatch(out, /[\u001b\u202e]/, 'no raw escape or reordering character reaches the terminal');
  assert.match(r.stdout, /^gate "gate-z\\u001b\[8m\\u202e": ledger verified/m);
  assert.match(r.stdout, /^gate gate-a: ledger verified/m, 'a valid name is shown as it is');
  assert.match(r.stderr, /gate "gate-z\\u001b\[8m\\u202e": warning: checked against the key registered for gate "gate-z\\u001b\[8m\\u202e"/);
});
