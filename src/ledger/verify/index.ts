// verifyLedger: the whole of section 7's offline check over a home or an export, streaming (one
// pass, bounded memory: per-entry state is dropped as soon as the chain moves on; only one small
// record per epoch is kept), with signatures checked on every core. Never opens a socket.
import { createPublicKey, type KeyObject } from 'node:crypto';
import { keyIdOf } from '../keys.js';
import { ANCHOR_KINDS, type AnchorKind } from '../epoch-anchors.js';
import { checkEntries, type PoolOptions } from './pool.js';
import { ChainChecker } from './chain.js';
import { checkAnchor } from './anchors.js';
import { openExportSource, openHomeSource, type OpenedSource } from './source.js';
import { fail, VerifyError, type VerifyFailure } from './reasons.js';

export { VerifyError, type VerifyFailure, type VerifyCode } from './reasons.js';

export type VerifySource = { ledgerDb: string } | { exportFile: string };

export interface VerifyOptions extends PoolOptions {
  /** The gate public key (PEM or KeyObject). Required for a home; for an export, omitting it trusts the key inside the file (keySource 'embedded'). */
  publicKey?: string | KeyObject;
  /** TSA chain PEM (signing certificate first, root last, or only the root). */
  tsaRoot?: string;
  /** Rekor log public key PEM. */
  rekorKey?: string | KeyObject;
  /** Fail when any entry lies outside an epoch anchored by every kind a trust root was given for. */
  requireAnchors?: boolean;
  onProgress?: (done: number, total: number) => void;
}

export interface VerifyReport {
  ok: boolean;
  entries: number;
  epochs: number;
  keyId: string | null;
  keySource: 'given' | 'embedded';
  anchors: Record<AnchorKind, { verified: number; unchecked: number }>;
  /** Kinds an epoch needs to count as anchored: those a trust root was given for. */
  requiredKinds: AnchorKind[];
  /** Highest seq covered by an anchored epoch (its own entry included), or null. */
  anchoredThrough: number | null;
  /** Entries after anchoredThrough (the unanchored tail), or null when none. */
  unanchored: { from: number; count: number } | null;
  warnings: string[];
  failure: VerifyFailure | null;
}

export class VerifyUsageError extends Error {}

function toKey(k: string | KeyObject, what: string): KeyObject {
  let key: KeyObject;
  try {
    key = typeof k === 'string' ? createPublicKey(k) : k;
  } catch {
    throw new VerifyUsageError(`${what} is not a public key`);
  }
  if (key.asymmetricKeyType !== 'ed25519') throw new VerifyUsageError(`${what} is not an Ed25519 public key`);
  return key;
}

export async function verifyLedger(source: VerifySource, opts: VerifyOptions = {}): Promise<VerifyReport> {
  const requiredKinds: AnchorKind[] = [];
  if (opts.tsaRoot !== undefined) requiredKinds.push('rfc3161');
  if (opts.rekorKey !== undefined) requiredKinds.push('rekor');
  if (opts.requireAnchors && requiredKinds.length === 0) throw new VerifyUsageError('requiring anchors needs a trust root: --tsa-root and/or --rekor-key');
  const report: VerifyReport = {
    ok: false,
    entries: 0,
    epochs: 0,
    keyId: null,
    keySource: 'given',
    anchors: { rfc3161: { verified: 0, unchecked: 0 }, rekor: { verified: 0, unchecked: 0 } },
    requiredKinds,
    anchoredThrough: null,
    unanchored: null,
    warnings: [],
    failure: null,
  };
  let src: OpenedSource | null = null;
  const chain = new ChainChecker();
  try {
    src = 'ledgerDb' in source ? openHomeSource(source.ledgerDb) : await openExportSource(source.exportFile);
    let key: KeyObject;
    if (opts.publicKey !== undefined) {
      key = toKey(opts.publicKey, 'the gate public key');
      if (src.embeddedKeyPem !== undefined) {
        let embedded: KeyObject | null = null;
        try {
          embedded = createPublicKey(src.embeddedKeyPem);
        } catch {
          embedded = null;
        }
        if (!embedded || keyIdOf(embedded) !== keyIdOf(key)) fail('key_mismatch', null, 'the export names another gate key than the one given');
      }
    } else if (src.embeddedKeyPem !== undefined) {
      key = toKey(src.embeddedKeyPem, "the export's gate key");
      report.keySource = 'embedded';
      report.warnings.push("no --public-key: trusting the gate key inside the export, which proves integrity only against whoever wrote the file, not against a forger");
    } else {
      throw new VerifyUsageError('the gate public key is required');
    }
    report.keyId = keyIdOf(key);
    const total = src.total;
    const step = Math.max(1, Math.floor(total / 200));
    for await (const c of checkEntries(src.entries(), key, opts)) {
      chain.push(c);
      if (opts.onProgress && chain.count % step === 0) opts.onProgress(chain.count, total);
    }
    opts.onProgress?.(chain.count, total);
    report.entries = chain.count;
    report.epochs = chain.epochs.size;
    // Anchors: every one must hold; coverage per kind is the newest epoch anchored by it.
    const newest: Record<AnchorKind, number | null> = { rfc3161: null, rekor: null };
    const trust = { tsaRoot: opts.tsaRoot, rekorKey: opts.rekorKey, gateKey: key };
    const seen = new Set<string>();
    for await (const a of src.anchors()) {
      const r = await checkAnchor(a, chain.epochs, trust, seen);
      const kind = a.kind as AnchorKind;
      report.anchors[kind][r]++;
      if (r === 'verified' && (newest[kind] === null || a.epoch > newest[kind]!)) newest[kind] = a.epoch;
    }
    for (const k of ANCHOR_KINDS) {
      if (report.anchors[k].unchecked > 0)
        report.warnings.push(`${report.anchors[k].unchecked} ${k === 'rfc3161' ? 'TSA token(s)' : 'Rekor entries'} not checked: no ${k === 'rfc3161' ? '--tsa-root' : '--rekor-key'}`);
    }
    // With no trust root given, an epoch counts as anchored by any anchor kind that verified.
    const kinds = requiredKinds.length > 0 ? requiredKinds : ANCHOR_KINDS.filter((k) => newest[k] !== null);
    const through = kinds.length === 0 ? null : kinds.map((k) => newest[k]).reduce<number | null>((m, v) => (m === null || v === null ? null : Math.min(m, v)), Number.MAX_SAFE_INTEGER);
    report.anchoredThrough = through;
    const from = through === null ? 0 : through + 1;
    if (from < chain.count) report.unanchored = { from, count: chain.count - from };
    if (opts.requireAnchors && report.unanchored) {
      fail('unanchored', report.unanchored.from, `${report.unanchored.count} entries from seq ${report.unanchored.from} lie outside every anchored epoch (${requiredKinds.join(' + ')})`);
    }
    report.ok = true;
  } catch (e) {
    if (!(e instanceof VerifyError)) throw e;
    report.failure = e.failure;
    report.entries = chain.count;
    report.epochs = chain.epochs.size;
  } finally {
    src?.close();
  }
  return report;
}
