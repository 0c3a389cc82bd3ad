// The one typed union of reasons `verify` fails, so callers (CLI, bench, tests) switch on a code
// instead of parsing messages. A detail is one line and never carries an entry's payload.
import type { AnchorErrorCode } from '../anchors/errors.js';
import type { AnchorKind } from '../epoch-anchors.js';

export type VerifyCode =
  | 'source_invalid' // the export's header or framing is unreadable (not an entry problem)
  | 'ledger_empty' // no entry at all: evidence of nothing (a deleted ledger reads the same); --allow-empty accepts it
  | 'key_mismatch' // the export names another gate key than the one given
  | 'key_invalid' // the key registered for a chain in a shared store is not an Ed25519 public key
  | 'entry_malformed' // an entry that lacks v/seq/ts/prev/kind/sig
  | 'entry_not_canonical' // stored bytes that are not the RFC 8785 form of the entry (duplicate or reordered key, not strict JSON)
  | 'seq_not_contiguous' // a sequence number missing, repeated or out of order (deletion, swap)
  | 'signature_invalid' // the Ed25519 signature does not verify with the gate key (edit, forgery)
  | 'chain_broken' // prev is not the hash of the entry before (deletion, insertion, edit before)
  | 'row_edited' // a database row whose unsigned columns (seq, ts, kind, hash) are not its signed entry's: edited outside the gate
  | 'time_decreasing' // ts earlier than the entry before (back-dating)
  | 'epoch_invalid' // an epoch entry whose range does not start at the previous epoch or end before it
  | 'epoch_root_mismatch' // the recomputed RFC 6962 root differs from the recorded one
  | 'anchor_orphan' // an anchor for an epoch the ledger does not contain (tail deleted)
  | 'anchor_invalid' // an anchor that fails its check; `anchorCode` says which
  | 'unanchored' // (--require-anchors) entries outside every anchored epoch
  | 'checkpoint_invalid' // (--checkpoint) a file that is not a checkpoint signed by the gate key
  | 'checkpoint_not_held' // (--checkpoint) the ledger holds fewer entries than a checkpoint covers (tail deleted)
  | 'proof_invalid' // (--proof) a proof file that is unreadable, or names another position or epoch
  | 'inclusion_invalid' // (--proof) the inclusion proof does not lead from the entry to the epoch root
  | 'checkpoint_mismatch'; // (--checkpoint) the first N entries are not those the checkpoint covers

export interface VerifyFailure {
  code: VerifyCode;
  /** The first bad entry (for anchors: the epoch entry's seq); null when not about one entry. */
  seq: number | null;
  anchor?: AnchorKind;
  anchorCode?: AnchorErrorCode;
  detail: string;
}

export class VerifyError extends Error {
  constructor(readonly failure: VerifyFailure) {
    super(failure.detail);
    this.name = 'VerifyError';
  }
}

export function fail(code: VerifyCode, seq: number | null, detail: string, extra: Partial<VerifyFailure> = {}): never {
  throw new VerifyError({ code, seq, detail, ...extra });
}
