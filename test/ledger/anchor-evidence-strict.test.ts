// Anchors are evidence and are read as such: a stored or exported anchor with a duplicate key is
// refused (JSON.parse would keep the last copy, so a forged first `logIndex` or
// `canonicalizedBody` would be ignored and the line accepted), and a repeated anchor line is an
// edit refused by verify, not a second anchor counted in its report.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { readFileSync, writeFileSync } from 'node:fs';
import { Anchoring } from '../../src/ledger/anchoring.js';
import { exportLedger } from '../../src/ledger/export.js';
import { verifyLedger } from '../../src/ledger/verify/index.js';
import { startOpensslTsa, type TestTsa } from '../helpers/openssl-tsa.js';
import { startFakeRekor, type FakeRekor } from '../helpers/fake-rekor.js';
import { tempDir } from '../helpers/cli.js';
import { withSnapshot } from '../store/helpers.js';
import { fixture, type Fixture } from './epoch-fixture.js';

let tsa: TestTsa;
let rekor: FakeRekor;
let f: Fixture;
let lines: string[];
before(async () => {
  [tsa, rekor] = await Promise.all([startOpensslTsa('Strict TSA'), startFakeRekor()]);
  f = fixture();
  f.add(5);
  const a = new Anchoring({
    anchors: f.anchors, ledger: f.ledger, key: f.key, transact: async (fn) => f.db.transaction(fn).immediate(),
    targets: { tsa: { url: tsa.url, chainPem: tsa.chainPem }, rekor: { url: rekor.url, keyPem: rekor.publicKeyPem } },
  });
  const r = await a.tick();
  assert.deepEqual(r.outcomes.map((o) => o.ok), [true, true]);
  const out = join(tempDir(), 'ledger.jsonl');
  await withSnapshot(f.path, (snap) => exportLedger(snap, f.key.publicKey, out));
  lines = readFileSync(out, 'utf8').trimEnd().split('\n');
});
after(() => Promise.all([tsa?.close(), rekor?.close()]));

const verifyExport = (text: string) => {
  const p = join(tempDir(), 'edited.jsonl');
  writeFileSync(p, text);
  return verifyLedger({ exportFile: p }, { publicKey: f.key.publicKey, tsaRoot: tsa.chainPem, rekorKey: rekor.publicKeyPem, workers: 0 });
};
const anchorLines = () => lines.filter((l) => /"kind":"(rekor|rfc3161)"/.test(l) && l.startsWith('{"epoch"'));

test('the export as written verifies with one anchor of each kind', async () => {
  const r = await verifyExport(lines.join('\n') + '\n');
  assert.equal(r.ok, true, r.failure?.detail);
  assert.deepEqual(r.anchors, { rfc3161: { verified: 1, unchecked: 0 }, rekor: { verified: 1, unchecked: 0 } });
});

test('a repeated anchor line (header count raised to match) is refused, not counted twice', async () => {
  const header = JSON.parse(lines[0]);
  for (const dup of anchorLines()) {
    const edited = [JSON.stringify({ ...header, anchors: header.anchors + 1 }), ...lines.slice(1), dup];
    const r = await verifyExport(edited.join('\n') + '\n');
    assert.equal(r.ok, false, dup.slice(0, 40));
    assert.equal(r.failure?.code, 'anchor_invalid');
    assert.match(r.failure!.detail, /more than one (rekor|rfc3161) anchor/);
  }
});

test('an anchor line whose Rekor entry repeats a key (forged first, genuine last) is refused', async () => {
  const rekorLine = anchorLines().find((l) => l.includes('"kind":"rekor"'))!;
  for (const [key, forged] of [
    ['"logIndex":', '"logIndex":999999,'],
    ['"canonicalizedBody":', `"canonicalizedBody":"${Buffer.from('{"forged":true}').toString('base64')}",`],
  ]) {
    const edited = rekorLine.replace(key, forged + key);
    assert.notEqual(edited, rekorLine);
    const r = await verifyExport(lines.map((l) => (l === rekorLine ? edited : l)).join('\n') + '\n');
    assert.equal(r.ok, false, key);
    assert.equal(r.failure?.code, 'source_invalid', r.failure?.detail);
    assert.match(r.failure!.detail, /not strict JSON/);
  }
});

test('a stored anchor row with a duplicate key is unreadable, and verify says so', async () => {
  const row = f.db.prepare("SELECT epoch_seq, data FROM anchors WHERE kind = 'rekor'").get() as { epoch_seq: number; data: string };
  try {
    f.db.prepare("UPDATE anchors SET data = ? WHERE kind = 'rekor'").run(row.data.replace('"logIndex":', '"logIndex":7,"logIndex":'));
    const r = await verifyLedger({ ledgerDb: f.path }, { publicKey: f.key.publicKey, rekorKey: rekor.publicKeyPem, workers: 0 });
    assert.equal(r.ok, false);
    assert.equal(r.failure?.code, 'anchor_invalid');
    assert.equal(r.failure?.anchorCode, 'malformed');
  } finally {
    f.db.prepare("UPDATE anchors SET data = ? WHERE kind = 'rekor'").run(row.data);
  }
});
