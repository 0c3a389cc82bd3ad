// Building a single-entry proof (proof.ts) from a home's ledger, in one read snapshot: the entry,
// the epoch that covers it, the audit path over that epoch's leaves, and the epoch's anchors.
import type { Db } from '../store/sqlite.js';
import { storedHash } from './entry.js';
import { epochCovering, hashBytes } from './epoch.js';
import { readAnchors, type StoredAnchor } from './epoch-anchors.js';
import { readEntryBodies, readEntryBody } from './ledger.js';
import { inclusionProof, leafHash } from './merkle.js';
import { PROOF_FORMAT, PROOF_VERSION, type ProofFile } from './proof.js';

export class ProveError extends Error {}

export function buildProof(db: Db, seq: number): ProofFile {
  db.exec('BEGIN');
  try {
    const entry = readEntryBody(db, seq);
    if (entry === null) throw new ProveError(`the ledger holds no entry ${seq}`);
    const covering = epochCovering(db, seq);
    if (!covering) throw new ProveError(`entry ${seq} is not sealed in an epoch yet (run cloakpipe ledger anchor)`);
    const { first, last } = covering.epoch;
    if (!(first <= seq && seq <= last)) throw new ProveError(`the epoch after entry ${seq} does not cover it`);
    const leaves: Buffer[] = [];
    for (const row of readEntryBodies(db, first, last)) {
      if (row.seq !== first + leaves.length) throw new ProveError(`entry ${first + leaves.length} is missing from its epoch`);
      leaves.push(leafHash(hashBytes(storedHash(row.body))));
    }
    if (leaves.length !== last - first + 1) throw new ProveError(`entries of epoch ${covering.epoch.seq} are missing`);
    const anchors = [...readAnchors(db)].filter((a): a is StoredAnchor => a.epoch === covering.epoch.seq && !('malformed' in a));
    return {
      format: PROOF_FORMAT,
      version: PROOF_VERSION,
      entry,
      epoch: covering.body,
      inclusion: { index: seq - first, size: leaves.length, hashes: inclusionProof(leaves, seq - first).map((h) => h.toString('hex')) },
      anchors,
    };
  } finally {
    if (db.inTransaction) db.exec('COMMIT');
  }
}
