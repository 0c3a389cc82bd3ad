// The order-dependent checks, run in seq order over the per-entry results: contiguous seq from 0
// (deletion, swap, insertion), prev = hash of the entry before (chain), every signature,
// non-decreasing ts (back-dating), and every epoch: its range starts where the previous epoch
// entry stands and ends just before it, and its root is the RFC 6962 root recomputed here. The
// tree over every entry (the one checkpoints sign) grows alongside.
import { GENESIS_PREV } from '../entry.js';
import { EpochRoot } from '../epoch.js';
import type { TreeHead } from '../checkpoint.js';
import type { CheckedEntry } from './check-entry.js';
import { fail } from './reasons.js';

export interface EpochInfo {
  seq: number;
  first: number;
  last: number;
  root: string;
  /** ts of the epoch's last entry: no anchor of this root can be older. */
  lastTs: string;
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
    const at = this.count;
    if (!c.ok) fail(c.notCanonical ? 'entry_not_canonical' : 'entry_malformed', c.seq ?? at, c.detail);
    if (c.seq !== at) fail('seq_not_contiguous', c.seq, `expected seq ${at}, found ${c.seq}`);
    if (!c.sigOk) fail('signature_invalid', c.seq, 'signature does not verify with the gate key');
    if (c.prev !== this.prevHash) fail('chain_broken', c.seq, `prev is not the hash of entry ${at - 1}`);
    if (this.prevTs !== null && c.ts < this.prevTs) fail('time_decreasing', c.seq, `ts ${c.ts} is before the previous entry's ${this.prevTs}`);
    if (c.kind === 'epoch') this.epoch(c);
    this.acc.addLeafHash(c.leaf);
    this.tree.addLeafHash(c.leaf);
    this.prevHash = c.hash;
    this.prevTs = c.ts;
    this.count++;
  }

  /** The RFC 6962 tree head over every entry pushed so far. */
  treeHead(): TreeHead {
    return { size: this.tree.size, root: this.tree.root() };
  }

  private epoch(c: Extract<CheckedEntry, { ok: true }>): void {
    const e = c.epoch!;
    const int = (v: unknown) => Number.isSafeInteger(v) && (v as number) >= 0;
    if (!int(e.first) || !int(e.last) || !int(e.size) || typeof e.root !== 'string' || !/^sha256:[0-9a-f]{64}$/.test(e.root))
      fail('epoch_invalid', c.seq, 'epoch entry lacks first, last, size or root');
    if (e.first !== this.acc.first) fail('epoch_invalid', c.seq, `epoch starts at ${e.first}, the previous epoch ends at ${this.acc.first}`);
    if (e.last !== c.seq - 1) fail('epoch_invalid', c.seq, `epoch ends at ${e.last}, not just before itself`);
    if (e.size !== this.acc.size || e.size !== (e.last as number) - (e.first as number) + 1)
      fail('epoch_invalid', c.seq, `epoch size ${e.size} does not match its range`);
    const root = this.acc.root();
    if (root !== e.root) fail('epoch_root_mismatch', c.seq, `recomputed root ${root.slice(7, 19)}… differs from the recorded one`);
    this.epochs.set(c.seq, { seq: c.seq, first: e.first as number, last: e.last as number, root, lastTs: this.prevTs ?? c.ts });
    this.lastEpochSeq = c.seq;
    this.acc = new EpochRoot(c.seq);
  }
}
