import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import {
  EMPTY_ROOT,
  MerkleTreeBuilder,
  foldLeaves,
  inclusionProof,
  leafHash,
  nodeHash,
  rootFromInclusionProof,
  rootFromLeafHashes,
  verifyInclusion,
} from '../../src/ledger/merkle.js';

// RFC 6962 MTH, written straight from the definition (recursive, k = largest power of 2 < n).
function referenceRoot(leaves: Buffer[]): Buffer {
  if (leaves.length === 0) return createHash('sha256').digest();
  if (leaves.length === 1) return leafHash(leaves[0]);
  let k = 1;
  while (k * 2 < leaves.length) k *= 2;
  return nodeHash(referenceRoot(leaves.slice(0, k)), referenceRoot(leaves.slice(k)));
}

const leafData = (n: number) => Array.from({ length: n }, (_, i) => Buffer.from(`entry-${i}`));

test('leaf and node hashes use the RFC 6962 prefixes', () => {
  const d = Buffer.from('abc');
  assert.deepEqual(leafHash(d), createHash('sha256').update(Buffer.concat([Buffer.from([0]), d])).digest());
  const a = Buffer.alloc(32, 1);
  const b = Buffer.alloc(32, 2);
  assert.deepEqual(nodeHash(a, b), createHash('sha256').update(Buffer.concat([Buffer.from([1]), a, b])).digest());
  assert.notDeepEqual(leafHash(Buffer.concat([a, b])), nodeHash(a, b));
});

test('RFC 6962 reference vectors (certificate-transparency test data)', () => {
  const leaves = ['', '00', '10', '2021', '3031', '40414243', '5051525354555657', '606162636465666768696a6b6c6d6e6f'].map((h) => Buffer.from(h, 'hex'));
  const roots = [
    '6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d',
    'fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125',
    'aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77',
    'd37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7',
    '4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4',
    '76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef',
    'ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c',
    '5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328',
  ];
  const b = new MerkleTreeBuilder();
  leaves.forEach((l, i) => {
    b.addLeaf(l);
    assert.equal(b.root().toString('hex'), roots[i], `root over ${i + 1} leaves`);
  });
  assert.equal(new MerkleTreeBuilder().root().toString('hex'), 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
  assert.deepEqual(EMPTY_ROOT, createHash('sha256').digest());
});

test('streaming root equals the recursive definition for every size up to 130', () => {
  const data = leafData(130);
  const b = new MerkleTreeBuilder();
  for (let n = 1; n <= 130; n++) {
    b.addLeaf(data[n - 1]);
    assert.deepEqual(b.root(), referenceRoot(data.slice(0, n)), `n=${n}`);
    assert.equal(b.size, n);
  }
  assert.deepEqual(rootFromLeafHashes(data.map(leafHash)), referenceRoot(data));
});

test('every inclusion proof verifies, for every index of every size up to 40', () => {
  for (let n = 1; n <= 40; n++) {
    const hashes = leafData(n).map(leafHash);
    const root = rootFromLeafHashes(hashes);
    for (let i = 0; i < n; i++) {
      const proof = inclusionProof(hashes, i);
      assert.ok(verifyInclusion(hashes[i], i, n, proof, root), `n=${n} i=${i}`);
    }
  }
});

test('a proof fails for another leaf, index, a truncated or extended path, or a changed hash', () => {
  const n = 23;
  const hashes = leafData(n).map(leafHash);
  const root = rootFromLeafHashes(hashes);
  for (let i = 0; i < n; i++) {
    const proof = inclusionProof(hashes, i);
    assert.equal(verifyInclusion(hashes[(i + 1) % n], i, n, proof, root), false);
    for (let j = 0; j < n; j++) if (j !== i) assert.equal(verifyInclusion(hashes[i], j, n, proof, root), false, `index ${j} for ${i}`);
    // The size is not bound by the path alone (a left-subtree leaf has the same path in a tree
    // of n and of n+1); it is bound by the signed checkpoint, which signs (size, root) together.
    if (proof.length > 0) assert.equal(verifyInclusion(hashes[i], i, n, proof.slice(0, -1), root), false);
    assert.equal(verifyInclusion(hashes[i], i, n, [...proof, Buffer.alloc(32)], root), false);
    for (let k = 0; k < proof.length; k++) {
      const bad = proof.map((p) => Buffer.from(p));
      bad[k][k % 32] ^= 1;
      assert.equal(verifyInclusion(hashes[i], i, n, bad, root), false);
    }
  }
  assert.equal(rootFromInclusionProof(hashes[0], n, n, []), null, 'index outside the tree');
  assert.equal(rootFromInclusionProof(hashes[0], -1, n, []), null);
});

test('a single-leaf tree has an empty proof whose root is the leaf hash', () => {
  const h = leafHash(Buffer.from('only'));
  assert.deepEqual(inclusionProof([h], 0), []);
  assert.ok(verifyInclusion(h, 0, 1, [], h));
});

test('proof verification works with sizes beyond 2^32 (bigint arithmetic)', () => {
  // A leaf at the right edge of a tree of 2^33 + 1 leaves: the path is one hash (the left
  // 2^33 subtree), index 2^33.
  const leaf = leafHash(Buffer.from('edge'));
  const left = Buffer.alloc(32, 7);
  const size = 2n ** 33n + 1n;
  assert.deepEqual(rootFromInclusionProof(leaf, size - 1n, size, [left]), nodeHash(left, leaf));
});

test('folded subtrees give the builder the state its leaves give, one by one, from any size', () => {
  // Every run of up to 20 leaves added to a builder already holding 0..40 leaves (verify's ranges:
  // any start, any length, the epoch tree starting anywhere); a shared memo changes nothing.
  const leaves = Array.from({ length: 60 }, (_, i) => leafHash(Buffer.from(`entry-${i}`)));
  const packed = Buffer.concat(leaves);
  const memo = new Map<string, Buffer>();
  for (let held = 0; held <= 40; held++)
    for (let from = 0; from <= 20; from += 7)
      for (let to = from; to <= from + 20; to++) {
        const oneByOne = new MerkleTreeBuilder();
        const folded = new MerkleTreeBuilder();
        for (let i = 0; i < held; i++) (oneByOne.addLeafHash(leaves[59 - i]), folded.addLeafHash(leaves[59 - i]));
        for (let i = from; i < to; i++) oneByOne.addLeafHash(leaves[i]);
        const f = foldLeaves(packed, from, to, held, memo);
        assert.equal(f.roots.length, 32 * f.sizes.length);
        f.sizes.forEach((size, k) => folded.addSubtree(f.roots.subarray(32 * k, 32 * k + 32), size));
        assert.equal(folded.size, oneByOne.size);
        assert.ok(folded.root().equals(oneByOne.root()), `held ${held}, leaves ${from}..${to}`);
        // Adding more leaves afterwards agrees too (the stack, not just the root, is the same).
        oneByOne.addLeafHash(leaves[0]);
        folded.addLeafHash(leaves[0]);
        assert.ok(folded.root().equals(oneByOne.root()));
      }
});

test('a subtree that does not fit where the builder stands is refused', () => {
  const b = new MerkleTreeBuilder();
  b.addLeafHash(leafHash(Buffer.from('a')));
  assert.throws(() => b.addSubtree(Buffer.alloc(32), 2), RangeError); // 1 leaf held: a pair cannot follow
  assert.throws(() => b.addSubtree(Buffer.alloc(32), 3), RangeError); // not a power of two
  b.addSubtree(Buffer.alloc(32), 1);
  b.addSubtree(Buffer.alloc(32), 2);
  assert.equal(b.size, 4);
});
