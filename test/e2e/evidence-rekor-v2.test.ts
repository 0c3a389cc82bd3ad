// Evidence end to end against a Rekor v2 (tlog-tiles) log: the real gate binary (mcp-proxy) in
// front of @modelcontextprotocol/server-everything, anchoring to a real RFC 3161 TSA (openssl) and
// the in-repo v2 log through the same `--rekor URL` flag a v1 log takes. `cloakpipe verify
// --require-anchors` then passes offline: each epoch's v2 entry by its signed checkpoint, its time
// by the TSA token. Changing the stored v2 entry makes verify fail.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { evidenceSuite } from '../helpers/evidence-suite.js';

const ev = evidenceSuite({ release: 'evidence-v2-test@1', tsaName: 'Evidence v2 TSA', rekor: { api: 'v2', prefill: 300 } });
const { verify } = ev;

test('a gate anchoring to a v2 log leaves a ledger that verifies with --require-anchors', async () => {
  const { home, stderr, entries } = await ev.anchoredSession(2);
  const kinds = entries.map((e) => e.kind);
  assert.equal(kinds.filter((k) => k === 'anchor_failure').length, 0, stderr);
  const epochs = kinds.filter((k) => k === 'epoch').length;
  assert.ok(ev.rekor.size >= 300 + epochs, 'every epoch went into the v2 log');
  const v = verify(home, '--tsa-root', ev.trust.tsaRoot, '--rekor-key', ev.trust.rekorKey, '--require-anchors');
  assert.equal(v.status, 0, v.stdout + v.stderr);
  assert.match(v.stdout, new RegExp(`rfc3161 ${epochs} verified; rekor ${epochs} verified`));

  // The stored anchor is a v2 entry; one changed byte of its proof makes verify fail.
  const db = new Database(join(home, 'ledger.db'));
  const row = db.prepare("SELECT epoch_seq, data FROM anchors WHERE kind = 'rekor' ORDER BY epoch_seq LIMIT 1").get() as { epoch_seq: number; data: string };
  const stored = JSON.parse(row.data);
  assert.equal(stored.entry.integratedTime, null);
  assert.equal(stored.entry.signedEntryTimestamp, undefined);
  const h: string = stored.entry.inclusionProof.hashes[0];
  stored.entry.inclusionProof.hashes[0] = (h[0] === '0' ? '1' : '0') + h.slice(1);
  db.prepare("UPDATE anchors SET data = ? WHERE kind = 'rekor' AND epoch_seq = ?").run(JSON.stringify(stored), row.epoch_seq);
  db.close();
  const bad = verify(home, '--tsa-root', ev.trust.tsaRoot, '--rekor-key', ev.trust.rekorKey);
  assert.equal(bad.status, 1, bad.stdout + bad.stderr);
  assert.match(bad.stdout, /rekor anchor of epoch \d+: .*inclusion/);
});
