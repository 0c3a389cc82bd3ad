// The anchor checks: each stored anchor must belong to an epoch of this ledger and commit to its
// root. TSA token: imprint = root, CMS signature, chain to --tsa-root at genTime, timeStamping
// EKU, genTime not before the epoch's last entry. Rekor entry: body = hashedrekord over the root
// signed (Ed25519ph) by the gate key, signed entry timestamp, inclusion proof, signed
// checkpoint, integratedTime not before the epoch's last entry. A Rekor v2 entry has neither SET
// nor integratedTime: its checkpoint is the proof and the epoch's time is the TSA token's. Offline: only verification
// modules are imported here, never a client.
import type { KeyObject } from 'node:crypto';
import { AnchorError } from '../anchors/errors.js';
import { verifyTsaToken } from '../anchors/tsa/verify.js';
import { verifyRekorEntry } from '../anchors/rekor/verify.js';
import { anchorNotBefore, rootBytes } from '../epoch.js';
import type { AnchorKind } from '../epoch-anchors.js';
import type { EpochInfo } from './chain.js';
import type { AnchorRecord } from './source.js';
import { fail } from './reasons.js';
import { unknownAnchorMember } from './members.js';

export interface AnchorTrust {
  tsaRoot?: string;
  rekorKey?: string | KeyObject;
  gateKey: KeyObject;
}

/**
 * Returns 'verified', or 'unchecked' when no trust root for its kind was given; throws otherwise.
 * `seen` holds the (epoch, kind) pairs already checked: a ledger stores one anchor of each kind
 * per epoch, so a second one (a repeated export line) is an edit, refused rather than counted
 * twice in the report.
 */
/** An anchor checked: unchecked (no trust root for its kind), or verified with the time it attests (null: none, a Rekor v2 entry). */
export type AnchorCheck = { status: 'unchecked' } | { status: 'verified'; at: number | null };

export async function checkAnchor(a: AnchorRecord, epochs: Map<number, EpochInfo>, trust: AnchorTrust, seen?: Set<string>): Promise<AnchorCheck> {
  const epoch = epochs.get(a.epoch);
  if (!epoch) fail('anchor_orphan', a.epoch, `an anchor names epoch ${a.epoch}, which is not an epoch entry of this ledger`);
  const kind = a.kind as AnchorKind;
  if (seen) {
    const k = `${a.epoch} ${String(a.kind)}`;
    if (seen.has(k)) fail('anchor_invalid', a.epoch, `epoch ${a.epoch} has more than one ${String(a.kind)} anchor`, { anchorCode: 'malformed' });
    seen.add(k);
  }
  if ('malformed' in a || (kind !== 'rfc3161' && kind !== 'rekor')) fail('anchor_invalid', a.epoch, 'stored anchor is unreadable', { anchorCode: 'malformed' });
  // Checked with or without a trust root: an unchecked anchor must not carry data either.
  const extra = unknownAnchorMember(a);
  if (extra !== null) fail('anchor_invalid', a.epoch, `${kind} anchor of epoch ${a.epoch} carries ${extra}, which no check reads`, { anchor: kind, anchorCode: 'malformed' });
  const root = { algorithm: 'sha256' as const, value: rootBytes(epoch.root) };
  const notBefore = anchorNotBefore(epoch.lastTs);
  try {
    if (a.kind === 'rfc3161') {
      if (trust.tsaRoot === undefined) return { status: 'unchecked' };
      if (typeof a.token !== 'string') fail('anchor_invalid', a.epoch, 'rfc3161 anchor has no token', { anchor: kind, anchorCode: 'malformed' });
      const t = await verifyTsaToken(Buffer.from(a.token, 'base64'), trust.tsaRoot, { digest: root, notBefore });
      return { status: 'verified', at: Date.parse(t.genTime) };
    } else {
      if (trust.rekorKey === undefined) return { status: 'unchecked' };
      const s = verifyRekorEntry(a.entry, trust.rekorKey, { signer: trust.gateKey, digest: root, notBefore });
      return { status: 'verified', at: s.integratedTime === null ? null : s.integratedTime * 1000 };
    }
  } catch (e) {
    if (!(e instanceof AnchorError)) throw e;
    if (e.code === 'key_invalid') throw e; // the auditor's trust root is unusable: a usage problem
    fail('anchor_invalid', a.epoch, `${kind} anchor of epoch ${a.epoch}: ${e.message}`, { anchor: kind, anchorCode: e.code });
  }
}
