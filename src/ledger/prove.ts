// Building a single-entry proof (proof.ts) from one read snapshot of a ledger: the entry, the
// epoch that covers it (the first epoch entry after it), the audit path over that epoch's leaves
// and the epoch's anchors. Only the signed bodies are read, never the index columns beside them.
import type { LedgerSnapshot } from '../store/ports.js';
import { EntryFormatError, parseStoredEntry, storedHash } from './entry.js';
import type { EpochEntry } from './epoch.js';
import { bodyIsKind, hashBytes } from './epoch.js';
import { parseAnchors, type StoredAnchor } from './epoch-anchors.js';
import { inclusionProof, leafHash } from './merkle.js';
import { PROOF_FORMAT, PROOF_VERSION, type ProofFile } from './proof.js';

export class ProveError extends Error {}

function coveringEpoch(snap: LedgerSnapshot, seq: number): { epoch: EpochEntry; body: string } | null {
  for (const body of snap.bodies(seq + 1)) {
    if (bodyIsKind(body, 'epoch')) return { epoch: parseStoredEntry(body) as unknown as EpochEntry, body };
  }
  return null;
}

export function buildProof(snap: LedgerSnapshot, seq: number): ProofFile {
  try {
    return build(snap, seq);
  } catch (e) {
    if (e instanceof EntryFormatError) throw new ProveError(`the ledger near entry ${seq} is not in its signed form (${e.message})`);
    throw e;
  }
}

function build(snap: LedgerSnapshot, seq: number): ProofFile {
  const [entry] = snap.bodies(seq, 1);
  if (entry === undefined || parseStoredEntry(entry).seq !== seq) throw new ProveError(`the ledger holds no entry ${seq}`);
  const covering = coveringEpoch(snap, seq);
  if (!covering) throw new ProveError(`entry ${seq} is not sealed in an epoch yet (cloakpipe ledger anchor seals one)`);
  const { first, last, seq: epochSeq } = covering.epoch;
  if (!(first <= seq && seq <= last)) throw new ProveError(`the epoch after entry ${seq} does not cover it`);
  const leaves: Buffer[] = [];
  for (const body of snap.bodies(first, last - first + 1)) leaves.push(leafHash(hashBytes(storedHash(body))));
  if (leaves.length !== last - first + 1) throw new ProveError(`entries of epoch ${epochSeq} are missing`);
  const anchors = [...parseAnchors(snap.anchors())].filter((a): a is StoredAnchor => a.epoch === epochSeq && !('malformed' in a));
  return {
    format: PROOF_FORMAT,
    version: PROOF_VERSION,
    entry,
    epoch: covering.body,
    inclusion: { index: seq - first, size: leaves.length, hashes: inclusionProof(leaves, seq - first).map((h) => h.toString('hex')) },
    anchors,
  };
}
