// The order-dependent checks, run in seq order over the per-entry results: contiguous seq from 0
// (deletion, swap, insertion), prev = hash of the entry before (chain), every signature,
// non-decreasing ts (back-dating), and every epoch: its range starts where the previous epoch
// entry stands and ends just before it, and its root is the RFC 6962 root recomputed here. The
// tree over every entry (the one checkpoints sign) grows alongside.
// A range checked by a worker (range.ts) has its inner links checked there with the same
// entryFault and its leaves folded into subtrees; here only its first entry's links, its epochs
// and those subtrees are taken in.
import { GENESIS_PREV } from '../entry.js';
import { EpochRoot } from '../epoch.js';
import type { TreeHead } from '../checkpoint.js';
import type { Fold } from '../merkle.js';
import type { CheckedEntry } from './check-entry.js';
import type { RangeChecked } from './range.js';
import { fail, type VerifyCode } from './reasons.js';

export interface EpochInfo {
  seq: number;
  first: number;
  last: number;
  root: string;
  /** ts of the epoch's last entry: no anchor of this root can be older. */
  lastTs: string;
}

export interface Fault {
  code: VerifyCode;
  seq: number | null;
  detail: string;
}

/**
 * What is wrong with entry number `at` given the entry before it, in the order verify reports
 * it: unreadable, seq, signature, chain, time. `before` null: the entry before is not known here
 * (the first of a worker's range): chain and time are left to the caller.
 */
export function entryFault(c: CheckedEntry, at: number, before: { hash: string; ts: string | null } | null): Fault | null {
  if (!c.ok) return { code: c.notCanonical ? 'entry_not_canonical' : 'entry_malformed', seq: c.seq ?? at, detail: c.detail };
  if (c.seq !== at) return { code: 'seq_not_contiguous', seq: c.seq, detail: `expected seq ${at}, found ${c.seq}` };
  if (!c.sigOk) return { code: 'signature_invalid', seq: c.seq, detail: 'signature does not verify with the gate key' };
  return before === null ? null : linkFault(c.seq, c.prev, c.ts, at, before);
}

function linkFault(seq: number, prev: string, ts: string, at: number, before: { hash: string; ts: string | null }): Fault | null {
  if (prev !== before.hash) return { code: 'chain_broken', seq, detail: `prev is not the hash of entry ${at - 1}` };
  if (before.ts !== null && ts < before.ts) return { code: 'time_decreasing', seq, detail: `ts ${ts} is before the previous entry's ${before.ts}` };
  return null;
}

const raise = (f: Fault): never => fail(f.code, f.seq, f.detail);

/**
 * Leaves `from`..`to` into `tree`: by their fold's subtrees when the fold was made for the size
 * the tree has (always for the tree over every entry; for an epoch tree unless the worker's
 * guess of where the epoch started was wrong), else one by one.
 */
function addFolded(tree: EpochRoot, fold: Fold, foldedAt: number, leaves: Uint8Array, from: number, to: number): void {
  if (tree.size === foldedAt) {
    for (let k = 0; k < fold.sizes.length; k++) tree.addSubtree(fold.roots.subarray(32 * k, 32 * k + 32), fold.sizes[k]);
  } else {
    for (let j = from; j < to; j++) tree.addLeafHash(leaves.subarray(32 * j, 32 * j + 32));
  }
}

export class ChainChecker {
  count = 0;
  private prevHash = GENESIS_PREV;
  private prevTs: string | null = null;
  private acc = new EpochRoot(0);
  private readonly tree = new EpochRoot(0);
  /** One small record per epoch (not per entry): what the anchor checks need. */
  readonly epochs = new Map<number, EpochInfo>();
  lastEpochSeq: number | null = null;

  push(c: CheckedEntry): void {
    const fault = entryFault(c, this.count, { hash: this.prevHash, ts: this.prevTs });
    if (fault) raise(fault);
    const ok = c as Extract<CheckedEntry, { ok: true }>;
    if (ok.kind === 'epoch') this.epoch(ok.seq, ok.epoch!, ok.ts);
    this.take(ok.leaf, ok.hash, ok.ts);
  }

  /**
   * A range a worker checked: entries `start`.. in order, their inner links already checked
   * there and their leaves folded into subtrees. Reports the same first failure push() would
   * have, entry by entry. `each(j)` runs once entry j passed (readers that consume verified
   * entries).
   */
  pushRange(r: RangeChecked, each?: (j: number) => void): void {
    if (r.start !== this.count) fail('source_invalid', null, `a checked range starts at entry ${r.start}, not ${this.count}`);
    const stop = r.fault ? r.fault.j : r.n;
    if (stop > 0) {
      const f = linkFault(r.first!.seq, r.first!.prev, r.first!.ts, this.count, { hash: this.prevHash, ts: this.prevTs });
      if (f) raise(f);
    }
    // The stretches between epoch entries, in order: each epoch entry is checked against the
    // epoch tree of the entries before it, then starts the next tree with itself.
    for (let i = 0, from = 0; i < r.segments.length; i++) {
      if (i > 0) {
        const e = r.epochs[i - 1];
        this.epoch(e.seq, e, e.ts, e.j === 0 ? undefined : e.prevTs);
      }
      const to = i < r.epochs.length ? r.epochs[i].j : stop;
      addFolded(this.acc, r.segments[i], i === 0 ? r.epochOffset : 0, r.leaves, from, to);
      this.count += to - from;
      if (each) for (let j = from; j < to; j++) each(j);
      from = to;
    }
    addFolded(this.tree, r.whole, r.start, r.leaves, 0, stop);
    // The worker stops at an entry's first fault; at the range's first entry that is one of its
    // own (unreadable, seq, signature), which verify reports before its links.
    if (r.fault) raise(r.fault.fault);
    this.prevHash = r.last!.hash;
    this.prevTs = r.last!.ts;
  }

  /** The RFC 6962 tree head over every entry pushed so far. */
  treeHead(): TreeHead {
    return { size: this.tree.size, root: this.tree.root() };
  }

  private take(leaf: Uint8Array, hash: string, ts: string): void {
    this.acc.addLeafHash(leaf);
    this.tree.addLeafHash(leaf);
    this.prevHash = hash;
    this.prevTs = ts;
    this.count++;
  }

  /** An epoch entry at `seq`; `lastTs`: the ts of the entry before it (default: the last taken, else its own). */
  private epoch(seq: number, e: { first: unknown; last: unknown; size: unknown; root: unknown; extra: string | null }, ownTs: string, lastTs?: string): void {
    const int = (v: unknown) => Number.isSafeInteger(v) && (v as number) >= 0;
    if (!int(e.first) || !int(e.last) || !int(e.size) || typeof e.root !== 'string' || !/^sha256:[0-9a-f]{64}$/.test(e.root))
      fail('epoch_invalid', seq, 'epoch entry lacks first, last, size or root');
    if (e.extra !== null) fail('epoch_invalid', seq, `epoch entry carries ${e.extra}, which no check reads (an epoch holds first, last, size and root)`);
    if (e.first !== this.acc.first) fail('epoch_invalid', seq, `epoch starts at ${e.first}, the previous epoch ends at ${this.acc.first}`);
    if (e.last !== seq - 1) fail('epoch_invalid', seq, `epoch ends at ${e.last}, not just before itself`);
    if (e.size !== this.acc.size || e.size !== (e.last as number) - (e.first as number) + 1) fail('epoch_invalid', seq, `epoch size ${e.size} does not match its range`);
    const root = this.acc.root();
    if (root !== e.root) fail('epoch_root_mismatch', seq, `recomputed root ${root.slice(7, 19)}… differs from the recorded one`);
    this.epochs.set(seq, { seq, first: e.first as number, last: e.last as number, root, lastTs: lastTs ?? this.prevTs ?? ownTs });
    this.lastEpochSeq = seq;
    this.acc = new EpochRoot(seq);
  }
}
