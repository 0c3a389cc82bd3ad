// The Rekor client against the in-repo v2 (tlog-tiles) log: a hashedrekord 0.0.2 request signed
// Ed25519ph by the gate key, answered with the entry, its inclusion proof and a C2SP signed
// checkpoint, verified with the code that verifies the real staging v2 entry. The log's tiles are
// real: read over HTTP, they give back the checkpoint's root and the proofs it served. A
// misbehaving v2 log is refused with precise codes; a v1 log at the same flag still works.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createPublicKey, generateKeyPairSync, verify as cryptoVerify } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { submitToRekor } from '../../src/ledger/anchors/rekor/client.js';
import { verifyRekorEntry } from '../../src/ledger/anchors/rekor/verify.js';
import { parseCheckpoint } from '../../src/ledger/anchors/rekor/checkpoint.js';
import { noteKeyId } from '../../src/ledger/anchors/rekor/log-key.js';
import { MerkleTreeBuilder, inclusionProof, leafHash, nodeHash } from '../../src/ledger/merkle.js';
import { startFakeRekor, fakeRoot, type FakeRekor } from '../helpers/fake-rekor.js';
import { startFakeRekorV2, type FakeRekorV2 } from '../helpers/fake-rekor-v2.js';
import { TiledTree, tileIndexPath, TILE_WIDTH } from '../helpers/tlog-tiles.js';
import { CLI } from '../helpers/public-log.js';
import { anchorCode } from '../helpers/anchor-code.js';

let log: FakeRekorV2;
let v1: FakeRekor;
const gate = generateKeyPairSync('ed25519');
before(async () => {
  // 66,000 unrelated leaves first: the tree has full level-0 and level-1 tiles and a level-2 node.
  [log, v1] = await Promise.all([startFakeRekorV2({ prefill: 66_000 }), startFakeRekor()]);
});
after(() => Promise.all([log.close(), v1.close()]));

const sha256 = (root: Buffer) => ({ algorithm: 'sha256' as const, value: root });

test('round trip: the v2 entry verifies (no SET, no time) and names the gate key and the root', async () => {
  log.misbehave = 'none';
  const start = log.size;
  for (let i = 0; i < 3; i++) {
    const root = fakeRoot(`v2-${i}`);
    const r = await submitToRekor(log.url, root, gate.privateKey, { rekorKey: log.publicKeyPem });
    assert.equal(r.summary!.logVersion, 2);
    assert.equal(r.summary!.treeSize, start + i + 1);
    assert.equal(r.summary!.logIndex, start + i);
    assert.equal(r.summary!.bodySignature, 'verified');
    assert.equal(r.entry.integratedTime, null);
    assert.ok(!('signedEntryTimestamp' in r.entry));
    assert.equal(r.entry.logID, log.logID);
    const s = verifyRekorEntry(r.entry, log.publicKeyPem, { signer: gate.publicKey, digest: sha256(root) });
    assert.equal(s.digestMatched, 'artifact');
    assert.equal(s.apiVersion, '0.0.2');
    assert.equal(await anchorCode(Promise.resolve().then(() => verifyRekorEntry(r.entry, log.publicKeyPem, { digest: sha256(fakeRoot('other')) }))), 'body_mismatch');
    const other = generateKeyPairSync('ed25519').publicKey;
    assert.equal(await anchorCode(Promise.resolve().then(() => verifyRekorEntry(r.entry, log.publicKeyPem, { signer: other }))), 'body_signature_invalid');
  }
});

test('the stored v2 entry verifies through the binary (anchor verify)', async () => {
  log.misbehave = 'none';
  const root = fakeRoot('v2-cli');
  const r = await submitToRekor(log.url, root, gate.privateKey, { rekorKey: log.publicKeyPem });
  const dir = mkdtempSync(join(tmpdir(), 'cp-rekor2-'));
  writeFileSync(join(dir, 'e.json'), JSON.stringify(r.entry, null, 2));
  writeFileSync(join(dir, 'k.pem'), log.publicKeyPem);
  writeFileSync(join(dir, 'g.pem'), gate.publicKey.export({ type: 'spki', format: 'pem' }) as string);
  const out = spawnSync(process.execPath, [CLI, 'anchor', 'verify', '--rekor-entry', join(dir, 'e.json'), '--rekor-key', join(dir, 'k.pem'),
    '--public-key', join(dir, 'g.pem'), '--digest', `sha256:${root.toString('hex')}`], { encoding: 'utf8' });
  assert.equal(out.status, 0, out.stdout + out.stderr);
  assert.match(out.stdout, /rekor entry: valid \(Rekor v2, tlog-tiles\)/);
  assert.match(out.stdout, /integrated\s+\(none/);
});

const get = async (url: string): Promise<Buffer> => {
  const r = await fetch(url);
  assert.equal(r.status, 200, url);
  return Buffer.from(await r.arrayBuffer());
};
const hashesOf = (b: Buffer) => Array.from({ length: b.length / 32 }, (_, i) => b.subarray(i * 32, i * 32 + 32));
const fold = (hs: Buffer[]): Buffer => (hs.length === 1 ? hs[0] : fold(Array.from({ length: hs.length / 2 }, (_, i) => nodeHash(hs[2 * i], hs[2 * i + 1]))));

test('the tiles, read over HTTP, give the signed checkpoint root and the served proofs', async () => {
  log.misbehave = 'none';
  const r = await submitToRekor(log.url, fakeRoot('v2-tiles'), gate.privateKey, { rekorKey: log.publicKeyPem });
  const note = (await get(`${log.url}/checkpoint`)).toString('utf8');
  const { checkpoint, signatures } = parseCheckpoint(note);
  const key = createPublicKey(log.publicKeyPem);
  assert.equal(signatures[0].name, checkpoint.origin);
  assert.deepEqual(signatures[0].keyHint, noteKeyId(checkpoint.origin, key)!.subarray(0, 4));
  assert.ok(cryptoVerify(null, checkpoint.signed, key, signatures[0].signature));
  const n = checkpoint.size;
  assert.ok(n > 65_536);
  // Level 0: full tiles then the partial one; entry bundles hash to the same leaves.
  const leaves: Buffer[] = [];
  const full = Math.floor(n / TILE_WIDTH);
  for (let t = 0; t <= full; t++) {
    const w = t < full ? '' : `.p/${n % TILE_WIDTH}`;
    if (t === full && n % TILE_WIDTH === 0) break;
    const tile = hashesOf(await get(`${log.url}/tile/0/${tileIndexPath(t)}${w}`));
    if (t === full || t % 97 === 0) {
      const bundle = await get(`${log.url}/tile/entries/${tileIndexPath(t)}${w}`);
      const fromEntries: Buffer[] = [];
      for (let p = 0; p < bundle.length; ) {
        const len = bundle.readUInt16BE(p);
        fromEntries.push(leafHash(bundle.subarray(p + 2, p + 2 + len)));
        p += 2 + len;
      }
      assert.deepEqual(fromEntries, tile, `entry bundle ${t}`);
    }
    leaves.push(...tile);
  }
  assert.equal(leaves.length, n);
  const b = new MerkleTreeBuilder();
  for (const h of leaves) b.addLeafHash(h);
  assert.deepEqual(b.root(), checkpoint.root, 'root from level-0 tiles = the signed root');
  // Level 1 holds one hash per full level-0 tile; level 2 the node over 65,536 leaves.
  const l1 = hashesOf(await get(`${log.url}/tile/1/000`));
  assert.equal(l1.length, TILE_WIDTH);
  for (let t = 0; t < TILE_WIDTH; t += 51) assert.deepEqual(l1[t], fold(leaves.slice(t * TILE_WIDTH, (t + 1) * TILE_WIDTH)));
  assert.deepEqual(hashesOf(await get(`${log.url}/tile/2/000.p/1`))[0], fold(l1));
  // The proof the log served for our entry is the RFC 6962 path over these leaves.
  const at = r.entry.inclusionProof.logIndex;
  const size = r.entry.inclusionProof.treeSize;
  assert.deepEqual(r.entry.inclusionProof.hashes, inclusionProof(leaves.slice(0, size), at).map((h) => h.toString('hex')));
  // Non-canonical tile paths are not served.
  assert.equal((await fetch(`${log.url}/tile/0/0`)).status, 404);
  assert.equal((await fetch(`${log.url}/tile/0/x000/001`)).status, 404);
});

test('tiles arithmetic: every proof and root of a 700-leaf tiled tree is the RFC 6962 one', () => {
  const t = new TiledTree();
  const data = Array.from({ length: 700 }, (_, i) => Buffer.from(`leaf ${i}`));
  const b = new MerkleTreeBuilder();
  for (const [i, d] of data.entries()) {
    t.append(d);
    b.addLeaf(d);
    if (i % 37 === 0 || i === 255 || i === 256 || i === 511 || i === 512) assert.deepEqual(t.root(), b.root(), `root at size ${i + 1}`);
  }
  const leaves = data.map((d) => leafHash(d));
  for (let m = 0; m < 700; m += 13) assert.deepEqual(t.inclusionProof(m), inclusionProof(leaves, m), `proof for ${m}`);
  for (const size of [1, 256, 257, 300, 512, 699]) assert.deepEqual(t.inclusionProof(size - 1, size), inclusionProof(leaves.slice(0, size), size - 1), `proof at size ${size}`);
});

test('a misbehaving v2 log is refused with precise codes', async () => {
  const cases: [FakeRekor['misbehave'], string][] = [
    ['truncated-proof', 'inclusion_invalid'],
    ['wrong-checkpoint-key', 'checkpoint_invalid'],
    ['http-500', 'unavailable'],
  ];
  for (const [m, want] of cases) {
    log.misbehave = m;
    assert.equal(await anchorCode(submitToRekor(log.url, fakeRoot(`bad-${m}`), gate.privateKey, { rekorKey: log.publicKeyPem })), want, m);
  }
  log.misbehave = 'none';
  // The same root twice: a v2 log cannot hand back a proof for an entry it already holds.
  await submitToRekor(log.url, fakeRoot('twice'), gate.privateKey, { rekorKey: log.publicKeyPem });
  assert.equal(await anchorCode(submitToRekor(log.url, fakeRoot('twice'), gate.privateKey, { rekorKey: log.publicKeyPem })), 'unavailable');
  // Another log's key cannot vouch for this log's entry.
  assert.equal(await anchorCode(submitToRekor(log.url, fakeRoot('v1-key'), gate.privateKey, { rekorKey: v1.publicKeyPem })), 'log_id_mismatch');
});

test('the same --rekor flag reaches a v1 log: no v2 API there, the client falls back to v1', async () => {
  const r = await submitToRekor(v1.url, fakeRoot('v1-fallback'), gate.privateKey, { rekorKey: v1.publicKeyPem });
  assert.equal(r.summary!.logVersion, 1);
  assert.equal(typeof r.entry.integratedTime, 'number');
});
