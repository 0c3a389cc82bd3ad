// Where an epoch's anchors live: a table beside `entries`, keyed by the epoch entry's seq. An
// anchor is self-authenticating (a TSA token signed by the TSA, a Rekor entry signed by the log,
// both committing to the epoch root), so it needs no place in the chain; storing it outside the
// chain also means obtaining it never appends an entry that would itself need anchoring.
import type { Db } from '../store/sqlite.js';
import type { RekorEntryFile } from './anchors/rekor/entry.js';
import { readEvidenceJson } from './anchors/evidence-json.js';

export type AnchorKind = 'rfc3161' | 'rekor';
export const ANCHOR_KINDS: readonly AnchorKind[] = ['rfc3161', 'rekor'];

/** One stored anchor: an RFC 3161 TimeStampToken (base64 DER) or a Rekor entry (file format). */
export type StoredAnchor =
  | { epoch: number; kind: 'rfc3161'; token: string }
  | { epoch: number; kind: 'rekor'; entry: RekorEntryFile };

export function initAnchorsTable(db: Db): void {
  db.exec(`CREATE TABLE IF NOT EXISTS anchors (
    epoch_seq INTEGER NOT NULL,
    kind TEXT NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (epoch_seq, kind)
  ) STRICT`);
}

function hasAnchorsTable(db: Db): boolean {
  return db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'anchors'").get() !== undefined;
}

export function storeAnchor(db: Db, anchor: StoredAnchor): void {
  initAnchorsTable(db);
  db.prepare('INSERT OR REPLACE INTO anchors (epoch_seq, kind, data) VALUES (?, ?, ?)').run(anchor.epoch, anchor.kind, JSON.stringify(anchor));
}

export function anchorKindsOf(db: Db, epochSeq: number): Set<AnchorKind> {
  if (!hasAnchorsTable(db)) return new Set();
  const rows = db.prepare('SELECT kind FROM anchors WHERE epoch_seq = ?').all(epochSeq) as { kind: AnchorKind }[];
  return new Set(rows.map((r) => r.kind));
}

/** Every stored anchor, by epoch then kind. Rows that do not parse are returned as `malformed`. */
export function* readAnchors(db: Db): Generator<StoredAnchor | { epoch: number; kind: string; malformed: true }> {
  if (!hasAnchorsTable(db)) return;
  const stmt = db.prepare('SELECT epoch_seq, kind, data FROM anchors ORDER BY epoch_seq, kind');
  for (const row of stmt.iterate() as Iterable<{ epoch_seq: number; kind: string; data: string }>) {
    let parsed: unknown;
    try {
      parsed = readEvidenceJson(row.data, 'stored anchor'); // strict: a duplicate key is unreadable, not last-wins
    } catch {
      parsed = null;
    }
    const a = parsed as StoredAnchor | null;
    if (!a || a.epoch !== row.epoch_seq || a.kind !== row.kind) yield { epoch: row.epoch_seq, kind: row.kind, malformed: true };
    else yield a;
  }
}
