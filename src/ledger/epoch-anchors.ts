// Where an epoch's anchors live: a table beside `entries`, keyed by the epoch entry's seq. An
// anchor is self-authenticating (a TSA token signed by the TSA, a Rekor entry signed by the log,
// both committing to the epoch root), so it needs no place in the chain; storing it outside the
// chain also means obtaining it never appends an entry that would itself need anchoring.
import type { AnchorRow, AnchorsPort } from '../store/ports.js';
import type { RekorEntryFile } from './anchors/rekor/entry.js';
import { readEvidenceJson } from './anchors/evidence-json.js';

export type AnchorKind = 'rfc3161' | 'rekor';
export const ANCHOR_KINDS: readonly AnchorKind[] = ['rfc3161', 'rekor'];

/** One stored anchor: an RFC 3161 TimeStampToken (base64 DER) or a Rekor entry (file format). */
export type StoredAnchor =
  | { epoch: number; kind: 'rfc3161'; token: string }
  | { epoch: number; kind: 'rekor'; entry: RekorEntryFile };

export function storeAnchor(port: AnchorsPort, anchor: StoredAnchor): void {
  port.put({ epoch: anchor.epoch, kind: anchor.kind, data: JSON.stringify(anchor) });
}

export function anchorKindsOf(port: AnchorsPort, epochSeq: number): Set<AnchorKind> {
  return port.kinds(epochSeq) as Set<AnchorKind>;
}

/** Stored anchors parsed, by epoch then kind. Rows that do not parse are returned as `malformed`. */
export function* parseAnchors(rows: Iterable<AnchorRow>): Generator<StoredAnchor | { epoch: number; kind: string; malformed: true }> {
  for (const row of rows) {
    let parsed: unknown;
    try {
      parsed = readEvidenceJson(row.data, 'stored anchor'); // strict: a duplicate key is unreadable, not last-wins
    } catch {
      parsed = null;
    }
    const a = parsed as StoredAnchor | null;
    if (!a || a.epoch !== row.epoch || a.kind !== row.kind) yield { epoch: row.epoch, kind: row.kind, malformed: true };
    else yield a;
  }
}
