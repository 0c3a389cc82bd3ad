// One decision handed over alone (product.md section 7, issue 21): the entry, its RFC 9162
// inclusion proof to its epoch's Merkle root, the signed epoch entry and that epoch's anchors.
// Every other entry stays private: the proof carries only their hashes (the audit path). Entries
// travel as their stored bytes, so the verifier checks exactly what the ledger holds.
import type { StoredAnchor } from './epoch-anchors.js';

export const PROOF_FORMAT = 'cloakpipe-proof';
export const PROOF_VERSION = 1;

export interface ProofFile {
  format: typeof PROOF_FORMAT;
  version: typeof PROOF_VERSION;
  /** The entry, exactly as stored (its RFC 8785 form). */
  entry: string;
  /** The signed epoch entry whose root covers it, exactly as stored. */
  epoch: string;
  /** The audit path from the entry's leaf to the epoch root: leaf index, tree size, hex hashes. */
  inclusion: { index: number; size: number; hashes: string[] };
  anchors: StoredAnchor[];
}
