// C2SP tlog-tiles storage for the in-repo v2 log: the RFC 6962 tree kept only as tiles, i.e. the
// hashes of tree levels 0, 8, 16, ... in groups of 256 (a tile at level L holds the hashes of
// tree level 8L; its N-th tile holds nodes N*256 .. N*256+255, the last one partial). Every other
// node, every inclusion proof and every root is computed from tiles alone, as a tiles client does.
import { nodeHash, leafHash, EMPTY_ROOT } from '../../src/ledger/merkle.js';

export const TILE_HEIGHT = 8;
export const TILE_WIDTH = 1 << TILE_HEIGHT;

/** C2SP tile index path: groups of three digits, all but the last prefixed "x" (1234067 -> x001/x234/067). */
export function tileIndexPath(n: number): string {
  let s = String(n);
  while (s.length % 3) s = '0' + s;
  const parts = s.match(/\d{3}/g)!;
  return parts.map((p, i) => (i < parts.length - 1 ? 'x' + p : p)).join('/');
}

/** Parses a tile index path back (refuses anything not in the one canonical form). */
export function parseTileIndexPath(p: string): number | null {
  const parts = p.split('/');
  if (!parts.every((x, i) => (i < parts.length - 1 ? /^x\d{3}$/ : /^\d{3}$/).test(x))) return null;
  const n = Number(parts.map((x) => x.replace('x', '')).join(''));
  return tileIndexPath(n) === p ? n : null;
}

const fold = (hashes: Buffer[]): Buffer => {
  let level = hashes;
  while (level.length > 1) {
    const next: Buffer[] = [];
    for (let i = 0; i < level.length; i += 2) next.push(nodeHash(level[i], level[i + 1]));
    level = next;
  }
  return level[0];
};

export class TiledTree {
  /** tileLevels[L] = hashes of tree level 8L (complete nodes only). */
  private tileLevels: Buffer[][] = [[]];
  readonly entries: Buffer[] = [];

  get size(): number {
    return this.tileLevels[0].length;
  }

  append(data: Buffer): number {
    const index = this.size;
    this.entries.push(data);
    this.tileLevels[0].push(leafHash(data));
    // A full tile at level L completes one node of level L+1.
    for (let L = 0; this.tileLevels[L].length % TILE_WIDTH === 0; L++) {
      const hs = this.tileLevels[L];
      if (!this.tileLevels[L + 1]) this.tileLevels[L + 1] = [];
      this.tileLevels[L + 1].push(fold(hs.slice(hs.length - TILE_WIDTH)));
    }
    return index;
  }

  /** The hashes of tile (L, N) as served: `width` of them (a full tile is TILE_WIDTH). */
  tile(level: number, n: number, width = TILE_WIDTH): Buffer | null {
    const hs = this.tileLevels[level] ?? [];
    if (width < 1 || width > TILE_WIDTH || hs.length < n * TILE_WIDTH + width) return null;
    return Buffer.concat(hs.slice(n * TILE_WIDTH, n * TILE_WIDTH + width));
  }

  /** Entry bundle N: each entry as a big-endian uint16 length and its bytes. */
  entryBundle(n: number, width = TILE_WIDTH): Buffer | null {
    if (width < 1 || width > TILE_WIDTH || this.entries.length < n * TILE_WIDTH + width) return null;
    return Buffer.concat(
      this.entries.slice(n * TILE_WIDTH, n * TILE_WIDTH + width).flatMap((e) => {
        const len = Buffer.alloc(2);
        len.writeUInt16BE(e.length);
        return [len, e];
      }),
    );
  }

  // The complete node at tree level `level`, index `i`, from the tile that holds its subtree.
  private node(level: number, i: number): Buffer {
    const L = Math.floor(level / TILE_HEIGHT);
    const span = 1 << (level % TILE_HEIGHT);
    return fold(this.tileLevels[L].slice(i * span, (i + 1) * span));
  }

  /** MTH of leaves [start, end) (RFC 6962 section 2.1), from complete nodes. */
  subtreeHash(start: number, end: number): Buffer {
    const n = end - start;
    if (n === 0) return Buffer.from(EMPTY_ROOT);
    if ((n & (n - 1)) === 0 && start % n === 0) return this.node(Math.log2(n), start / n);
    const k = 2 ** Math.floor(Math.log2(n - 1));
    return nodeHash(this.subtreeHash(start, start + k), this.subtreeHash(start + k, end));
  }

  root(size = this.size): Buffer {
    return this.subtreeHash(0, size);
  }

  /** RFC 6962 PATH(m, D[0:size]): leaf to root. */
  inclusionProof(m: number, size = this.size, start = 0): Buffer[] {
    const n = size - start;
    if (n <= 1) return [];
    const k = 2 ** Math.floor(Math.log2(n - 1));
    if (m < start + k) return [...this.inclusionProof(m, start + k, start), this.subtreeHash(start + k, size)];
    return [...this.inclusionProof(m, size, start + k), this.subtreeHash(start, start + k)];
  }
}
