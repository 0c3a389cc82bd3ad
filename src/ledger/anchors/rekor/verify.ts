// One Rekor entry, offline: the log's key vouches (SET) for body, time and index; the inclusion
// proof puts the body in a tree whose size and root the log signed (checkpoint); the body commits
// to the expected digest and signer. Used by `anchor verify` and by the ledger's `verify`.
import type { KeyObject } from 'node:crypto';
import { AnchorError, fail } from '../errors.js';
import { parseDigest, parsePublicKey, type DigestSpec } from '../encoding.js';
import { parseRekorEntry } from './entry.js';
import { logIdOf } from './log-key.js';
import { verifySet } from './set.js';
import { verifyInclusionProof } from './inclusion.js';
import { verifyCheckpoint } from './checkpoint.js';
import { checkRekorBody, parseRekorBody } from './body.js';

export type RekorSummary = {
  kind: string;
  apiVersion: string;
  logID: string;
  logIndex: number;
  treeIndex: number;
  treeSize: number;
  rootHash: string;
  integratedTime: number;
  checkpointOrigin: string;
  recordedDigests: string[];
  bodySignature: 'verified' | 'not_checked';
  digest?: string;
  digestMatched?: 'recorded' | 'artifact';
};

export type RekorVerifyOptions = { digest?: string | DigestSpec; signer?: KeyObject | string };

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
  if (!logIdOf(key).equals(e.logID)) fail('log_id_mismatch', 'logID is not the SHA-256 of the given log key');
  verifySet(e, key);
  verifyInclusionProof(e);
  const cp = verifyCheckpoint(e.proof.checkpoint, key, { size: e.proof.treeSize, root: e.proof.rootHash });
  const body = parseRekorBody(e.body);
  const check = checkRekorBody(body, { digest, signer });
  return {
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
