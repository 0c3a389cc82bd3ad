// RFC 6962 / RFC 9162 Merkle trees: the epoch root commits to every entry of an epoch, in order,
// so dropping, inserting or swapping one entry changes the root. Leaves and interior nodes are
// hashed with distinct prefixes (0x00 / 0x01) so a leaf can never be passed off as a node.
import { createHash, hash } from 'node:crypto';

const LEAF = Buffer.from([0x00]);
const NODE = Buffer.from([0x01]);

export function leafHash(data: Uint8Array): Buffer {
  return createHash('sha256').update(LEAF).update(data).digest();
}

export function nodeHash(left: Uint8Array, right: Uint8Array): Buffer {
  return createHash('sha256').update(NODE).update(left).update(right).digest();
}

/** Root of the empty tree: SHA-256 of the empty string (RFC 6962 section 2.1). */
export const EMPTY_ROOT: Buffer = createHash('sha256').digest();

/**
 * Streaming root: push leaf hashes in order; memory is one hash per set bit of the size (at most
 * 64), so an epoch of any length is sealed in bounded memory.
 */
export class MerkleTreeBuilder {
  // Complete subtrees, left to right, sizes strictly decreasing powers of two.
  private stack: { hash: Buffer; size: number }[] = [];
  private count = 0;

  get size(): number {
    return this.count;
  }

  /** Appends a leaf by its data (hashed with the leaf prefix). */
  addLeaf(data: Uint8Array): void {
    this.addLeafHash(leafHash(data));
  }

  /** Appends an already computed leaf hash (32 bytes). */
  addLeafHash(hash: Uint8Array): void {
    this.addSubtree(hash, 1);
  }

  /**
   * Appends `size` leaves (a power of two) by the root of their perfect subtree: the same as
   * adding them one by one, which needs the size so far to be a multiple of `size` (a block of
   * foldLeaves).
   */
  addSubtree(hash: Uint8Array, size: number): void {
    if (hash.length !== 32) throw new RangeError('merkle: a leaf hash is 32 bytes');
    if (!(size >= 1 && (size & (size - 1)) === 0 && this.count % size === 0)) throw new RangeError(`merkle: a subtree of ${size} leaves cannot follow ${this.count}`);
    let node: { hash: Buffer; size: number } = { hash: Buffer.from(hash), size };
    while (this.stack.length > 0 && this.stack[this.stack.length - 1].size === node.size) {
      const left = this.stack.pop()!;
      node = { hash: nodeHash(left.hash, node.hash), size: left.size * 2 };
    }
    this.stack.push(node);
    this.count += size;
  }

  /** The RFC 6962 root of the leaves pushed so far (does not consume the builder). */
  root(): Buffer {
    if (this.stack.length === 0) return Buffer.from(EMPTY_ROOT);
    let acc = this.stack[this.stack.length - 1].hash;
    for (let i = this.stack.length - 2; i >= 0; i--) acc = nodeHash(this.stack[i].hash, acc);
    return acc;
  }
}

/** Perfect subtrees, left to right, that stand for a run of leaves (sizes and packed roots). */
export interface Fold {
  sizes: number[];
  roots: Uint8Array;
}

/**
 * Leaves `from`..`to` of `leaves` (packed 32-byte leaf hashes) as the perfect subtrees a
 * streaming builder already holding `offset` leaves would merge them into: at each step the
 * largest power of two that the position divides and that fits. Adding the blocks with
 * addSubtree gives the builder the state adding the leaves one by one gives. `memo` shares the
 * blocks of several folds over the same leaves.
 */
export function foldLeaves(leaves: Uint8Array, from: number, to: number, offset: number, memo = new Map<string, Buffer>()): Fold {
  const sizes: number[] = [];
  const blocks: Buffer[] = [];
  for (let i = from, at = offset; i < to; ) {
    let size = 1;
    while (size * 2 <= to - i && at % (size * 2) === 0) size *= 2;
    const key = `${i}/${size}`;
    let root = memo.get(key);
    if (root === undefined) memo.set(key, (root = perfectRoot(leaves, i, size)));
    sizes.push(size);
    blocks.push(root);
    i += size;
    at += size;
  }
  const roots = new Uint8Array(32 * blocks.length); // its own memory: it is posted between threads
  blocks.forEach((b, k) => roots.set(b, 32 * k));
  return { sizes, roots };
}

/** The root of the perfect subtree over `size` (a power of two) leaves from `from`, level by level in one buffer. */
function perfectRoot(leaves: Uint8Array, from: number, size: number): Buffer {
  const level = Buffer.from(leaves.subarray(32 * from, 32 * (from + size)));
  const pair = Buffer.alloc(65);
  pair[0] = 0x01;
  for (let width = size; width > 1; width /= 2)
    for (let k = 0; k < width / 2; k++) {
      level.copy(pair, 1, 64 * k, 64 * k + 64);
      hash('sha256', pair, 'buffer').copy(level, 32 * k);
    }
  return level.subarray(0, 32);
}

/** Root over leaf hashes (not leaf data). */
export function rootFromLeafHashes(hashes: Iterable<Uint8Array>): Buffer {
  const b = new MerkleTreeBuilder();
  for (const h of hashes) b.addLeafHash(h);
  return b.root();
}

function largestPowerOfTwoBelow(n: number): number {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
}

function subtreeRoot(hashes: readonly Uint8Array[], start: number, end: number): Buffer {
  const b = new MerkleTreeBuilder();
  for (let i = start; i < end; i++) b.addLeafHash(hashes[i]);
  return b.root();
}

/**
 * Inclusion proof (audit path, RFC 6962 section 2.1.1) for leaf `index` in the tree over
 * `hashes` (leaf hashes), ordered from the leaf upwards.
 */
export function inclusionProof(hashes: readonly Uint8Array[], index: number): Buffer[] {
  if (!Number.isInteger(index) || index < 0 || index >= hashes.length) throw new RangeError('merkle: index out of range');
  const path: Buffer[] = [];
  const walk = (m: number, start: number, end: number): void => {
    const n = end - start;
    if (n <= 1) return;
    const k = largestPowerOfTwoBelow(n);
    if (m < k) {
      walk(m, start, start + k);
      path.push(subtreeRoot(hashes, start + k, end));
    } else {
      walk(m - k, start + k, end);
      path.push(subtreeRoot(hashes, start, start + k));
    }
  };
  walk(index, 0, hashes.length);
  return path;
}

/**
 * Root implied by an inclusion proof (RFC 9162 section 2.1.3.2), or null when the proof has the
 * wrong shape for (index, size). Callers compare the result with a trusted root.
 */
export function rootFromInclusionProof(
  leaf: Uint8Array,
  index: bigint | number,
  size: bigint | number,
  proof: readonly Uint8Array[],
): Buffer | null {
  const idx = BigInt(index);
  const n = BigInt(size);
  if (idx < 0n || idx >= n) return null;
  let fn = idx;
  let sn = n - 1n;
  let r: Buffer = Buffer.from(leaf);
  for (const p of proof) {
    if (p.length !== 32) return null;
    if (sn === 0n) return null;
    if ((fn & 1n) === 1n || fn === sn) {
      r = nodeHash(p, r);
      while ((fn & 1n) === 0n && fn !== 0n) {
        fn >>= 1n;
        sn >>= 1n;
      }
    } else {
      r = nodeHash(r, p);
    }
    fn >>= 1n;
    sn >>= 1n;
  }
  if (sn !== 0n) return null;
  return r;
}

/** True when `proof` proves `leaf` (a leaf hash) at `index` in a tree of `size` with `root`. */
export function verifyInclusion(
  leaf: Uint8Array,
  index: bigint | number,
  size: bigint | number,
  proof: readonly Uint8Array[],
  root: Uint8Array,
): boolean {
  const r = rootFromInclusionProof(leaf, index, size, proof);
  return r !== null && r.length === root.length && r.equals(Buffer.from(root));
}
