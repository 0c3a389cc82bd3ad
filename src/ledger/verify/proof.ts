// `verify --proof`: one entry checked alone, offline. Guards against a proof for an entry the
// ledger never held (a forged or edited entry fails its signature; a genuine entry of another
// epoch or another ledger fails the inclusion proof or the epoch's signature) and against a
// proof whose epoch was never anchored (each anchor must commit to the epoch root).
import type { KeyObject } from 'node:crypto';
import { parseStrict } from '../../wire/strict-parse.js';
import { isJsonObject } from '../../core/json.js';
import { verifyInclusion } from '../merkle.js';
import type { AnchorKind } from '../epoch-anchors.js';
import { PROOF_FORMAT, PROOF_VERSION, type ProofFile } from '../proof.js';
import { checkEntryLine, type CheckedEntry } from './check-entry.js';
import { checkAnchor } from './anchors.js';
import { unknownProofMember } from './members.js';
import type { EpochInfo } from './chain.js';
import { fail, VerifyError, type VerifyFailure } from './reasons.js';

export interface ProofTrust {
  publicKey: KeyObject;
  tsaRoot?: string;
  rekorKey?: string | KeyObject;
  /** Kinds that must have a verified anchor for the proof to hold. */
  requiredKinds?: AnchorKind[];
}

export interface ProofReport {
  ok: boolean;
  seq: number | null;
  kind: string | null;
  epoch: { seq: number; first: number; last: number; root: string } | null;
  anchors: Record<AnchorKind, { verified: number; unchecked: number }>;
  failure: VerifyFailure | null;
}

export const MAX_PROOF_BYTES = 16 * 1024 * 1024;

function readProof(text: string): ProofFile {
  const bad = (why: string): never => fail('proof_invalid', null, `proof: ${why}`);
  if (text.length > MAX_PROOF_BYTES) bad('file too large');
  let v: unknown;
  try {
    v = parseStrict(text.endsWith('\n') ? text.slice(0, -1) : text);
  } catch (e) {
    return bad(`not strict JSON (${(e as Error).message})`);
  }
  if (!isJsonObject(v) || v.format !== PROOF_FORMAT || v.version !== PROOF_VERSION) return bad('not a cloakpipe proof (version 1)');
  const p = v as unknown as ProofFile;
  const inc = p.inclusion as unknown;
  if (typeof p.entry !== 'string' || typeof p.epoch !== 'string' || !isJsonObject(inc) || !Array.isArray(p.anchors)) bad('lacks entry, epoch, inclusion or anchors');
  const { index, size, hashes } = p.inclusion;
  if (!Number.isSafeInteger(index) || !Number.isSafeInteger(size) || !Array.isArray(hashes) || hashes.length > 64 || !hashes.every((h) => typeof h === 'string' && /^[0-9a-f]{64}$/.test(h)))
    bad('inclusion needs index, size and at most 64 hex hashes');
  for (const a of p.anchors) if (!isJsonObject(a) || !Number.isSafeInteger(a.epoch) || typeof a.kind !== 'string') bad('an anchor names no epoch or kind');
  const extra = unknownProofMember(p);
  if (extra !== null) bad(`carries ${extra}, which no check reads`);
  return p;
}

function signedEntry(line: string, key: KeyObject, what: string): Extract<CheckedEntry, { ok: true }> {
  const c = checkEntryLine(line, key);
  if (!c.ok) return fail(c.notCanonical ? 'entry_not_canonical' : 'entry_malformed', c.seq, `${what}: ${c.detail}`);
  if (!c.sigOk) fail('signature_invalid', c.seq, `${what}: signature does not verify with the gate key`);
  return c;
}

export async function verifyProof(text: string, trust: ProofTrust): Promise<ProofReport> {
  const report: ProofReport = { ok: false, seq: null, kind: null, epoch: null, anchors: { rfc3161: { verified: 0, unchecked: 0 }, rekor: { verified: 0, unchecked: 0 } }, failure: null };
  try {
    const p = readProof(text);
    const entry = signedEntry(p.entry, trust.publicKey, 'the entry');
    report.seq = entry.seq;
    report.kind = entry.kind;
    const epoch = signedEntry(p.epoch, trust.publicKey, 'the epoch entry');
    const e = epoch.epoch;
    const int = (x: unknown): x is number => Number.isSafeInteger(x) && (x as number) >= 0;
    if (epoch.kind !== 'epoch' || !e || !int(e.first) || !int(e.last) || !int(e.size) || typeof e.root !== 'string' || !/^sha256:[0-9a-f]{64}$/.test(e.root))
      fail('epoch_invalid', epoch.seq, 'the epoch entry is not an epoch');
    if (e.extra !== null) fail('epoch_invalid', epoch.seq, `the epoch entry carries ${e.extra}, which no check reads`);
    const { first, last, size, root } = e as { first: number; last: number; size: number; root: string };
    if (last !== epoch.seq - 1 || size !== last - first + 1) fail('epoch_invalid', epoch.seq, 'the epoch range does not end just before it');
    if (entry.seq < first || entry.seq > last) fail('proof_invalid', entry.seq, `entry ${entry.seq} is not in epoch ${epoch.seq} (entries ${first}..${last})`);
    const { index, size: treeSize, hashes } = p.inclusion;
    if (index !== entry.seq - first || treeSize !== size) fail('proof_invalid', entry.seq, 'the inclusion proof names another position or tree size');
    const path = hashes.map((h) => Buffer.from(h, 'hex'));
    if (!verifyInclusion(entry.leaf, index, treeSize, path, Buffer.from(root.slice(7), 'hex')))
      fail('inclusion_invalid', entry.seq, `the inclusion proof does not lead from entry ${entry.seq} to the root of epoch ${epoch.seq}`);
    report.epoch = { seq: epoch.seq, first, last, root };
    // The proven entry's own time is the bound: no anchor of a root that covers it can be older.
    const info: EpochInfo = { seq: epoch.seq, first, last, root, lastTs: entry.ts };
    const seen = new Set<string>();
    for (const a of p.anchors) {
      if (seen.has(a.kind)) fail('proof_invalid', epoch.seq, `two ${a.kind} anchors`);
      seen.add(a.kind);
      const r = await checkAnchor(a, new Map([[epoch.seq, info]]), { tsaRoot: trust.tsaRoot, rekorKey: trust.rekorKey, gateKey: trust.publicKey });
      report.anchors[a.kind as AnchorKind][r.status]++;
    }
    for (const k of trust.requiredKinds ?? [])
      if (report.anchors[k].verified === 0) fail('unanchored', epoch.seq, `epoch ${epoch.seq} carries no verified ${k} anchor`);
    report.ok = true;
  } catch (err) {
    if (!(err instanceof VerifyError)) throw err;
    report.failure = err.failure;
  }
  return report;
}

