// A database row holds its signed body and, beside it, columns the gate looks rows up by (the
// head by seq, the last epoch by kind) that no signature covers: a row whose columns are not its
// body's was edited outside the gate (`row_edited`). Checked where the body is checked, from the
// values that check already worked out, so it costs verify no second pass over the ledger.
import type { StoredRow } from '../../store/ports.js';

export interface EditedRow {
  /** The row's key. */
  seq: number;
  /** Which of seq, ts, kind and hash differ from the signed entry. */
  columns: string[];
}

/** The row's columns that are not the checked entry's (its seq, ts, kind, and the hash of the stored line), or null when none. */
export function editedRow(row: StoredRow, entry: { seq: number; ts: string; kind: string; hash: string }): EditedRow | null {
  const columns = (['seq', 'ts', 'kind', 'hash'] as const).filter((c) => row[c] !== entry[c]);
  return columns.length > 0 ? { seq: row.seq, columns } : null;
}
