// verifyLedger: the whole of section 7's offline check over a home or an export, streaming (one
// pass, bounded memory: per-entry state is dropped as soon as the chain moves on; only one small
// record per epoch is kept), with signatures checked on every core. Never opens a socket.
import { createPublicKey, type KeyObject } from 'node:crypto';
import { keyIdOf } from '../../core/signer.js';
import { ANCHOR_KINDS, type AnchorKind } from '../epoch-anchors.js';
import { checkEntries, checkRanges, rowRanges, type PoolOptions } from './pool.js';
import { ChainChecker } from './chain.js';
import { AnchorTimes, type AnchorLag } from './lag.js';
import { openExportSource, openHomeSource, openSnapshotSource, type OpenedSource } from './source.js';
import { fail, VerifyError, type VerifyFailure } from './reasons.js';
import { storedBytesFault } from './stored-bytes.js';
import type { EditedRow } from './edited-row.js';
import { CheckpointError, readCheckpoint, type TreeHead } from '../checkpoint.js';
import { PUBLIC_REKOR_KEY_PEM } from './public-rekor.js';
import type { Entry } from '../entry.js';
import type { LedgerSnapshot } from '../../store/ports.js';

export { VerifyError, type VerifyFailure, type VerifyCode } from './reasons.js';

/**
 * A home's ledger database, an export file, or a chain already read in one snapshot (a gate's
 * chain in a shared store; verify closes it).
 */
export type VerifySource = { ledgerDb: string } | { exportFile: string } | { snapshot: LedgerSnapshot };

export interface VerifyOptions extends PoolOptions {
  /** The gate public key (PEM or KeyObject). Required for a home; for an export, omitting it trusts the key inside the file (keySource 'embedded'). */
  publicKey?: string | KeyObject;
  /** TSA chain PEM (signing certificate first, root last, or only the root). */
  tsaRoot?: string;
  /** Rekor log public key PEM. */
  rekorKey?: string | KeyObject;
  /**
   * Fail when any entry lies outside an epoch anchored by every kind a trust root was given for;
   * with no trust root given, Rekor anchors checked with the built-in public Rekor key.
   */
  requireAnchors?: boolean;
  /** Signed checkpoints (ledger checkpoint) the ledger must still hold, unchanged. */
  checkpoints?: string[];
  /**
   * Accept a ledger with no entry (a home no gate has run in yet) with a warning. Without it an
   * empty ledger fails `ledger_empty`: it is evidence of nothing, and deleting every entry of a
   * ledger (and its anchors) leaves exactly that (ADR 087).
   */
  allowEmpty?: boolean;
  /**
   * The key is the one registered for the chain in the store being checked, not one the auditor
   * gave: one that is not an Ed25519 public key is that store's fault (a registration written
   * around init) and fails the chain `key_invalid`, where a key given is a usage error.
   */
  keyFromStore?: boolean;
  onProgress?: (done: number, total: number) => void;
  /**
   * Each entry, in order, once its own and its chain checks passed: readers (scope) consume the
   * verified entries instead of reading the ledger a second way. A later failure is still
   * reported in the result; a caller that must not use a broken ledger's entries checks it.
   */
  onEntry?: (entry: Entry) => void;
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
  /**
   * The verified anchor that came longest after its epoch's last entry (lag.ts), or null when no
   * verified anchor attests a time: what tells anchors of history written long ago from anchors
   * of history rewritten now.
   */
  anchorLag: AnchorLag | null;
  /** Entries after anchoredThrough (the unanchored tail), or null when none. */
  unanchored: { from: number; count: number } | null;
  /** The RFC 6962 tree head over every entry (what `ledger checkpoint` signs). */
  tree: TreeHead | null;
  /** Checkpoints given and found held, unchanged. */
  checkpoints: number;
  /** True when the built-in public Rekor key stood in for --rekor-key. */
  builtinRekorKey: boolean;
  warnings: string[];
  failure: VerifyFailure | null;
}

export class VerifyUsageError extends Error {}

function toKey(k: string | KeyObject, what: string, fromStore = false): KeyObject {
  const refuse = (problem: string): never => {
    if (fromStore) fail('key_invalid', null, `the key registered for this gate in the store ${problem}`);
    throw new VerifyUsageError(`${what} ${problem}`);
  };
  let key: KeyObject;
  try {
    key = typeof k === 'string' ? createPublicKey(k) : k;
  } catch {
    return refuse('is not a public key');
  }
  if (key.asymmetricKeyType !== 'ed25519') refuse('is not an Ed25519 public key');
  return key;
}

/**
 * The anchor kinds required and the Rekor key to check with: the kinds a trust root was given for;
 * with --require-anchors and no trust root at all, Rekor with the built-in public key.
 */
export function anchorTrust(o: { tsaRoot?: string; rekorKey?: string | KeyObject; requireAnchors?: boolean }) {
  const builtinRekorKey = o.requireAnchors === true && o.tsaRoot === undefined && o.rekorKey === undefined;
  const rekorKey = builtinRekorKey ? PUBLIC_REKOR_KEY_PEM : o.rekorKey;
  const requiredKinds: AnchorKind[] = [];
  if (o.tsaRoot !== undefined) requiredKinds.push('rfc3161');
  if (rekorKey !== undefined) requiredKinds.push('rekor');
  return { builtinRekorKey, rekorKey, requiredKinds };
}

export async function verifyLedger(source: VerifySource, opts: VerifyOptions = {}): Promise<VerifyReport> {
  const { builtinRekorKey, rekorKey, requiredKinds } = anchorTrust(opts);
  const report: VerifyReport = {
    ok: false,
    entries: 0,
    epochs: 0,
    keyId: null,
    keySource: 'given',
    anchors: { rfc3161: { verified: 0, unchecked: 0 }, rekor: { verified: 0, unchecked: 0 } },
    requiredKinds,
    anchoredThrough: null,
    anchorLag: null,
    unanchored: null,
    tree: null,
    checkpoints: 0,
    builtinRekorKey,
    warnings: [],
    failure: null,
  };
  let src: OpenedSource | null = null;
  const chain = new ChainChecker();
  try {
    src = 'ledgerDb' in source ? openHomeSource(source.ledgerDb) : 'snapshot' in source ? openSnapshotSource(source.snapshot) : await openExportSource(source.exportFile);
    let key: KeyObject;
    if (opts.publicKey !== undefined) {
      key = toKey(opts.publicKey, 'the gate public key', opts.keyFromStore);
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
    const checkpoints = readCheckpoints(opts.checkpoints ?? [], key);
    const held = () => {
      while (checkpoints.length > 0 && checkpoints[0].size === chain.count) {
        const cp = checkpoints.shift()!;
        const here = chain.treeHead();
        if (here.root !== cp.root)
          fail('checkpoint_mismatch', cp.size - 1, `the first ${cp.size} entries are not those the checkpoint covers: root ${here.root.slice(7, 19)}…, the checkpoint's ${cp.root.slice(7, 19)}…`);
        report.checkpoints++;
      }
    };
    held();
    const total = src.total;
    const step = Math.max(1, Math.floor(total / 200));
    const withEntries = opts.onEntry !== undefined;
    const inlineFirst = opts.inlineFirst ?? 2048;
    // The first edited row, when the workers checked the columns as they read the rows; else the source is asked after the chain.
    let edited: EditedRow | null | undefined;
    if (src.rows && opts.workers !== 0 && total > inlineFirst && checkpoints.length === 0) {
      // A home longer than the inline head: workers read their own row ranges, all of them; the
      // main thread only joins them (ADR 044).
      for await (const r of checkRanges(rowRanges(src.rows, opts.batchSize ?? 1024), src.rows.ledgerDb, key, { ...opts, withEntries })) {
        chain.pushRange(r, opts.onEntry ? (j) => opts.onEntry!(r.entries![j]) : undefined);
        edited ??= r.edited;
        opts.onProgress?.(chain.count, total);
      }
    } else {
      for await (const c of checkEntries(src.entries(), key, { ...opts, withEntries })) {
        chain.push(c);
        held();
        if (opts.onEntry && c.ok) opts.onEntry(c.entry!);
        if (opts.onProgress && chain.count % step === 0) opts.onProgress(chain.count, total);
      }
    }
    opts.onProgress?.(chain.count, total);
    // Every row counted was read: a row the reads passed over (a key no range or bound reaches) is not left unchecked.
    if (chain.count !== total) fail('source_invalid', null, `the ledger holds ${total} entries; ${chain.count} were read in order`);
    // The signed bodies hold; the columns the gate looks rows up by (the last epoch by kind, the head by seq) must say the same.
    if (edited === undefined) edited = src.editedRow?.();
    if (edited) fail('row_edited', edited.seq, `the row of entry ${edited.seq} was edited outside the gate: its ${edited.columns.join(', ')} column${edited.columns.length > 1 ? 's differ' : ' differs'} from the signed entry`);
    if (checkpoints.length > 0) {
      const cp = checkpoints[0];
      fail('checkpoint_not_held', chain.count, `a checkpoint covers ${cp.size} entries; the ledger holds ${chain.count} (entries from seq ${chain.count} were removed)`);
    }
    if (chain.count === 0) {
      if (!opts.allowEmpty)
        fail('ledger_empty', null, 'the ledger holds no entry: it is evidence of nothing, and a ledger whose every entry was deleted reads the same (--allow-empty accepts a home no gate has run in yet)');
      report.warnings.push('the ledger holds no entry: it is evidence of nothing, and a ledger whose every entry was deleted reads the same');
    }
    report.tree = chain.treeHead();
    report.entries = chain.count;
    report.epochs = chain.epochs.size;
    // Anchors: every one must hold; coverage per kind is the newest epoch anchored by it.
    const newest: Record<AnchorKind, number | null> = { rfc3161: null, rekor: null };
    const trust = { tsaRoot: opts.tsaRoot, rekorKey, gateKey: key };
    const seen = new Set<string>();
    const times = new AnchorTimes();
    let anchorChecks: typeof import('./anchors.js') | undefined;
    for await (const a of src.anchors()) {
      // The anchor checks (X.509, CMS, Rekor) load with the first anchor: a ledger without any never pays their start.
      anchorChecks ??= await import('./anchors.js');
      const r = await anchorChecks.checkAnchor(a, chain.epochs, trust, seen);
      const kind = a.kind as AnchorKind;
      report.anchors[kind][r.status]++;
      if (r.status !== 'verified') continue;
      times.add(a.epoch, r.at);
      if (newest[kind] === null || a.epoch > newest[kind]!) newest[kind] = a.epoch;
    }
    report.anchorLag = times.longest(chain.epochs);
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
    const bytes = storedBytesFault(e);
    if (!(e instanceof VerifyError) && !bytes) throw e;
    report.tree = null;
    report.failure = bytes ?? (e as VerifyError).failure;
    report.entries = chain.count;
    report.epochs = chain.epochs.size;
  } finally {
    src?.close();
  }
  return report;
}

/** Checkpoints by size; one that is not a checkpoint signed by this gate key fails verify. */
function readCheckpoints(notes: string[], key: KeyObject): TreeHead[] {
  return notes
    .map((note, i) => {
      try {
        return readCheckpoint(note, key);
      } catch (e) {
        if (!(e instanceof CheckpointError)) throw e;
        return fail('checkpoint_invalid', null, `checkpoint ${i + 1}: ${e.message}`);
      }
    })
    .sort((a, b) => a.size - b.size);
}
