// Inclusion proof: guards against an entry the log never put in its tree (or put elsewhere).
// The leaf is the canonicalized body; RFC 9162 section 2.1.3.2 recomputes the root from the
// audit path and it must equal the proof's root hash (which the checkpoint then vouches for).
import { fail } from '../errors.js';
import { leafHash, rootFromInclusionProof } from '../../merkle.js';
import type { RekorEntry } from './entry.js';

export function verifyInclusionProof(e: RekorEntry): void {
  const p = e.proof;
  if (p.logIndex >= p.treeSize) fail('inclusion_invalid', 'inclusion proof index is outside the tree');
  const root = rootFromInclusionProof(leafHash(e.body), p.logIndex, p.treeSize, p.hashes);
  if (root === null) fail('inclusion_invalid', 'inclusion proof has the wrong number of hashes for its index and tree size');
  if (!root.equals(p.rootHash)) fail('inclusion_invalid', 'inclusion proof does not lead to its root hash');
}
