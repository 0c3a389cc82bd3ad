// The ledger's chain as written: contiguous seq, prev links, signatures by the gate key,
// time that never goes backwards; two connections (two gates on one home) share one chain.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { createPrivateKey, generateKeyPairSync } from 'node:crypto';
import { Ledger, readEntries } from '../../src/ledger/ledger.js';
import { entryHash, verifyEntrySignature, GENESIS_PREV } from '../../src/ledger/entry.js';
import { FileSigner } from '../../src/keys/file.js';
import type { GateKey } from '../../src/ledger/keys.js';
import { tempDir } from '../helpers/cli.js';
import { ledgerDb } from '../store/helpers.js';

function key(): GateKey {
  const { privateKey } = generateKeyPairSync('ed25519');
  const pk = createPrivateKey(privateKey.export({ type: 'pkcs8', format: 'pem' }));
  return new FileSigner(pk);
}

const D = `sha256:${'ab'.repeat(32)}` as const;
const DECISION = { kind: 'decision', outcome: 'allow', manifest_digest: D, policy_digest: D } as const;
const STARTUP = { kind: 'startup', mode: 'enforce', release: 't@1', manifest_digest: D, policy_digest: D, context_digest: D, gate_key: D, pid: 1, operations_recovered: 0 } as const;

test('entries chain, sign and keep time monotonic even when the clock steps back', () => {
  const { ledger: port } = ledgerDb(join(tempDir(), 'l.db'), { create: true });
  const k = key();
  let now = Date.parse('2026-01-01T00:00:10Z');
  const ledger = new Ledger(port, k, () => now);
  ledger.appendInTx({ ...STARTUP });
  now -= 5000; // NTP step backwards
  ledger.appendInTx({ ...DECISION });
  now += 60_000;
  ledger.appendInTx({ kind: 'shutdown', reason: 'test' });
  const entries = [...readEntries(port)];
  assert.deepEqual(entries.map((e) => e.seq), [0, 1, 2]);
  assert.equal(entries[0].prev, GENESIS_PREV);
  for (let i = 1; i < entries.length; i++) {
    assert.equal(entries[i].prev, entryHash(entries[i - 1]));
    assert.ok(entries[i].ts >= entries[i - 1].ts);
  }
  assert.equal(entries[1].ts, entries[0].ts, 'the stepped-back clock is clamped to the head');
  for (const e of entries) assert.ok(verifyEntrySignature(e, k.publicKey));
  const other = key();
  assert.ok(!verifyEntrySignature(entries[0], other.publicKey));
  const edited = { ...entries[1], outcome: 'refuse' };
  assert.ok(!verifyEntrySignature(edited, k.publicKey));
});

test('two connections on one ledger append to one contiguous chain', () => {
  const path = join(tempDir(), 'l.db');
  const k = key();
  const a = new Ledger(ledgerDb(path, { create: true }).ledger, k);
  const b = new Ledger(ledgerDb(path).ledger, k);
  for (let i = 0; i < 20; i++) (i % 3 === 0 ? b : a).appendInTx({ ...DECISION, i });
  const entries = [...readEntries(a.port)];
  assert.deepEqual(entries.map((e) => e.seq), [...Array(20).keys()]);
  for (let i = 1; i < entries.length; i++) assert.equal(entries[i].prev, entryHash(entries[i - 1]));
});
