// One Rekor entry, offline: the log's key vouches (SET) for body, time and index; the inclusion
// proof puts the body in a tree whose size and root the log signed (checkpoint); the body commits
// to the expected digest and signer. Used by `anchor verify` and by the ledger's `verify`.
// A v2 (tlog-tiles) entry has no SET: the signed checkpoint is the only signature, so everything
// else must follow from it. The body is the leaf of the inclusion proof, the proof's index is the
// entry's index (a tiles log is not sharded into a global index), the checkpoint's root and size
// are the proof's, and the log ID is the C2SP key ID of the given key under the checkpoint's
// origin. No time is claimed: it comes from the epoch's RFC 3161 token.
import type { KeyObject } from 'node:crypto';
import { AnchorError, fail } from '../errors.js';
import { parseDigest, parsePublicKey, type DigestSpec } from '../encoding.js';
import { parseRekorEntry } from './entry.js';
import { logIdOf, noteKeyId, v1Signer, v2Signer } from './log-key.js';
import { verifySet } from './set.js';
import { verifyInclusionProof } from './inclusion.js';
import { parseCheckpoint, verifyCheckpoint } from './checkpoint.js';
import { checkRekorBody, parseRekorBody } from './body.js';

export type RekorSummary = {
  /** 1: Rekor v1 (signed entry timestamp); 2: tlog-tiles (checkpoint only, no integrated time). */
  logVersion: 1 | 2;
  kind: string;
  apiVersion: string;
  logID: string;
  logIndex: number;
  treeIndex: number;
  treeSize: number;
  rootHash: string;
  integratedTime: number | null;
  checkpointOrigin: string;
  recordedDigests: string[];
  bodySignature: 'verified' | 'not_checked';
  digest?: string;
  digestMatched?: 'recorded' | 'artifact';
};

/** `notBefore`: the integratedTime must not precede it (a v2 entry states none: its time is the TSA token's). */
export type RekorVerifyOptions = { digest?: string | DigestSpec; signer?: KeyObject | string; notBefore?: Date };

export function verifyRekorEntry(
  entryJson: string | Uint8Array | object,
  rekorKey: string | KeyObject,
  opts: RekorVerifyOptions = {},
): RekorSummary {
  try {
    return verifyRekorEntryUnguarded(entryJson, rekorKey, opts);
  } catch (e) {
    // Any exception on hostile input is a malformed entry, never a crash.
    if (e instanceof AnchorError) throw e;
    throw new AnchorError('malformed', 'rekor entry: unreadable structure');
  }
}

function verifyRekorEntryUnguarded(entryJson: string | Uint8Array | object, rekorKey: string | KeyObject, opts: RekorVerifyOptions): RekorSummary {
  const key = parsePublicKey(rekorKey, 'rekor key');
  let digest: DigestSpec | undefined;
  if (opts.digest !== undefined) {
    digest = typeof opts.digest === 'string' ? (parseDigest(opts.digest) ?? fail('malformed', 'digest: expected sha256:HEX')) : opts.digest;
  }
  const signer = opts.signer === undefined ? undefined : parsePublicKey(opts.signer, 'signer key');
  const e = parseRekorEntry(entryJson);
  let cp;
  if (e.version === 1) {
    if (!logIdOf(key).equals(e.logID)) fail('log_id_mismatch', 'logID is not the SHA-256 of the given log key');
    verifySet(e, key);
    verifyInclusionProof(e);
    cp = verifyCheckpoint(e.proof.checkpoint, key, v1Signer(key), { size: e.proof.treeSize, root: e.proof.rootHash });
  } else {
    const origin = parseCheckpoint(e.proof.checkpoint).checkpoint.origin;
    const id = noteKeyId(origin, key);
    if (!id) fail('key_invalid', 'rekor key: a tlog-tiles log key is Ed25519 or ECDSA');
    if (!id.equals(e.logID)) fail('log_id_mismatch', "logID is not the given log key's C2SP key ID for the checkpoint's origin");
    if (e.logIndex !== e.proof.logIndex) fail('inclusion_invalid', 'a v2 entry is at its inclusion proof index');
    verifyInclusionProof(e);
    cp = verifyCheckpoint(e.proof.checkpoint, key, v2Signer(key), { size: e.proof.treeSize, root: e.proof.rootHash });
  }
  const body = parseRekorBody(e.body, e.version);
  const check = checkRekorBody(body, { digest, signer });
  if (opts.notBefore && e.integratedTime !== null && e.integratedTime * 1000 < opts.notBefore.getTime())
    fail('gentime_before', `integratedTime ${new Date(e.integratedTime * 1000).toISOString()} is before ${opts.notBefore.toISOString()}`);
  return {
    logVersion: e.version,
    kind: body.kind,
    apiVersion: body.apiVersion,
    logID: e.logID.toString('hex'),
    logIndex: e.logIndex,
    treeIndex: e.proof.logIndex,
    treeSize: e.proof.treeSize,
    rootHash: e.proof.rootHash.toString('hex'),
    integratedTime: e.integratedTime,
    checkpointOrigin: cp.origin,
    recordedDigests: body.digests.map((d) => `${d.algorithm}:${d.value.toString('hex')}`),
    bodySignature: check.bodySignature,
    ...(digest ? { digest: `${digest.algorithm}:${digest.value.toString('hex')}`, digestMatched: check.digestMatched } : {}),
  };
}
