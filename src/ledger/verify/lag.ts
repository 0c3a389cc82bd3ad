// How long after its last entry each epoch was anchored, the longest of them reported. An anchor
// proves an epoch's root existed by the anchor's time; nothing bounds how much earlier the
// entries' own ts may claim. A key holder who rewrites history and anchors it anew gets anchors
// dated now for entries dated long ago: the check of each anchor passes (its time is not before
// the entries), and only this distance, shown to the auditor, tells the two apart.
import type { EpochInfo } from './chain.js';

export interface AnchorLag {
  /** The epoch entry's seq. */
  epoch: number;
  /** Its last entry's ts, and the earliest time an anchor of it attests (ISO 8601). */
  lastTs: string;
  anchoredAt: string;
  ms: number;
}

/** The earliest attested time of each epoch's anchors, by epoch seq. */
export class AnchorTimes {
  private readonly earliest = new Map<number, number>();

  add(epoch: number, at: number | null): void {
    if (at === null || !Number.isFinite(at)) return;
    const had = this.earliest.get(epoch);
    if (had === undefined || at < had) this.earliest.set(epoch, at);
  }

  /** The epoch anchored longest after its last entry, or null when no anchor attests a time. */
  longest(epochs: Map<number, EpochInfo>): AnchorLag | null {
    let worst: AnchorLag | null = null;
    for (const [seq, at] of this.earliest) {
      const e = epochs.get(seq);
      if (!e) continue;
      const ms = Math.max(0, at - Date.parse(e.lastTs));
      if (worst === null || ms > worst.ms) worst = { epoch: seq, lastTs: e.lastTs, anchoredAt: new Date(at).toISOString(), ms };
    }
    return worst;
  }
}
