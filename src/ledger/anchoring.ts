// The gate-side anchoring: every interval (and at shutdown, and on `cloakpipe ledger anchor`)
// seal an epoch in one transaction, then obtain its anchors over the network outside any
// transaction, and store them beside the ledger. A failed anchor never stops the gate: it is
// recorded as an `anchor_failure` entry (reason code only) and the next epoch retries; since a
// later root covers every earlier entry through the chain, one good anchor later covers the gap.
import { StoreError, type AnchorsPort, type Transact } from '../store/ports.js';
import type { EntryFields } from './entry.js';
import type { GateKey } from './keys.js';
import type { Ledger } from './ledger.js';
import { AnchorError } from './anchors/errors.js';
import { anchorNotBefore, bodyIsKind, lastEpoch, lastTsOf, rootBytes, sealEpochInTx, type EpochEntry } from './epoch.js';
import { anchorKindsOf, storeAnchor, type AnchorKind } from './epoch-anchors.js';

export interface AnchorTargets {
  tsa?: { url: string; chainPem: string };
  rekor?: { url: string; keyPem: string };
  timeoutMs?: number;
}

export interface AnchoringParts {
  anchors: AnchorsPort;
  ledger: Ledger;
  key: GateKey;
  /** The store's write transaction. */
  transact: Transact;
  targets: AnchorTargets;
  log?: (line: string) => void;
}

export type AnchorOutcome = { kind: AnchorKind; ok: true } | { kind: AnchorKind; ok: false; reason: string };

export interface TickResult {
  epoch: EpochEntry | null; // the epoch sealed or retried, if any
  sealed: boolean;
  outcomes: AnchorOutcome[];
}

// The clients (and the X.509, CMS and ASN.1 code they check answers with, ~55 modules) load only
// in a gate that anchors to a TSA or a Rekor log: a gate without --tsa or --rekor never needs
// them, and loading them cost every start ~0.1 s (docs/performance.md).
const tsaClient = () => import('./anchors/tsa/client.js');
const rekorClient = () => import('./anchors/rekor/client.js');

/** Loads the clients `targets` names now: a gate that is to anchor and cannot load them fails at
 *  start, as it did when they were imported statically, not quietly at its first epoch. So does
 *  one given a TSA root that holds no usable certificate or a Rekor key that is no public key:
 *  every anchor would fail (key_invalid), for as long as it runs. Throws AnchorError. */
export async function loadAnchorClients(targets: AnchorTargets): Promise<void> {
  await Promise.all([targets.tsa ? tsaClient() : null, targets.rekor ? rekorClient() : null]);
  if (targets.tsa) (await import('./anchors/tsa/chain.js')).parseTrustBundle(targets.tsa.chainPem);
  if (targets.rekor) (await import('./anchors/encoding.js')).parsePublicKey(targets.rekor.keyPem, 'rekor key');
}

function reasonOf(e: unknown): string {
  if (e instanceof AnchorError) return e.code;
  return 'error';
}

/**
 * Obtains the anchors `epoch` is missing; never throws for network or anchor errors. `lastTs`:
 * the ts of the last entry it seals.
 */
export async function anchorEpoch(parts: AnchoringParts, epoch: EpochEntry, lastTs: string): Promise<AnchorOutcome[]> {
  const { anchors, targets } = parts;
  // Read and written through the store's transactions: a shared store answers only there.
  const have = await parts.transact(() => anchorKindsOf(anchors, epoch.seq));
  const root = rootBytes(epoch.root);
  // An anchor older than the entries it seals is one verify refuses (a clock ahead of the TSA's):
  // not stored, recorded as a failure.
  const notBefore = anchorNotBefore(lastTs);
  const jobs: Promise<AnchorOutcome>[] = [];
  if (targets.tsa && !have.has('rfc3161')) {
    const tsa = targets.tsa;
    jobs.push(
      tsaClient()
        .then((c) => c.requestTimestamp(tsa.url, { algorithm: 'sha256', value: root }, { chainPem: tsa.chainPem, timeoutMs: targets.timeoutMs, notBefore }))
        .then(
          (r) => parts.transact(() => storeAnchor(anchors, { epoch: epoch.seq, kind: 'rfc3161', token: r.token.toString('base64') })).then(() => ({ kind: 'rfc3161' as const, ok: true as const })),
          (e) => ({ kind: 'rfc3161' as const, ok: false as const, reason: reasonOf(e) }),
        ),
    );
  }
  if (targets.rekor && !have.has('rekor')) {
    const rekor = targets.rekor;
    jobs.push(
      rekorClient()
        .then((c) => c.submitToRekor(rekor.url, root, parts.key, { rekorKey: rekor.keyPem, timeoutMs: targets.timeoutMs, notBefore }))
        .then(
          (r) => parts.transact(() => storeAnchor(anchors, { epoch: epoch.seq, kind: 'rekor', entry: r.entry })).then(() => ({ kind: 'rekor' as const, ok: true as const })),
          (e) => ({ kind: 'rekor' as const, ok: false as const, reason: reasonOf(e) }),
        ),
    );
  }
  return Promise.all(jobs);
}

/**
 * True when every entry after the last epoch is an anchor_failure (nothing new to seal), read
 * from the signed bodies, not the kind column beside them. Stops at the first other entry: only
 * a run of failure entries (a few per failed round) is ever read whole.
 */
function onlyFailuresSince(ledger: Ledger, epochSeq: number): boolean {
  const PAGE = 64;
  for (let from = epochSeq + 1; ; from += PAGE) {
    let n = 0;
    for (const body of ledger.port.bodies(from, PAGE)) {
      if (!bodyIsKind(body, 'anchor_failure')) return false;
      n++;
    }
    if (n < PAGE) return true;
  }
}

export class Anchoring {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<unknown> = Promise.resolve();
  /** (epoch seq, kind) pairs whose failure is already recorded, so a retry does not repeat it. */
  private recorded = new Set<string>();

  constructor(private readonly parts: AnchoringParts) {}

  get enabled(): boolean {
    return !!(this.parts.targets.tsa || this.parts.targets.rekor);
  }

  start(intervalMs: number): void {
    if (this.timer || intervalMs <= 0) return;
    this.timer = setInterval(() => void this.tick().catch((e) => this.parts.log?.(`anchoring: ${(e as Error).message}`)), intervalMs);
    this.timer.unref();
  }

  /** One round, serialized with any other: seal what is new, anchor the newest epoch. */
  tick(): Promise<TickResult> {
    const next = this.running.then(() => this.round());
    this.running = next.catch(() => undefined);
    return next;
  }

  /** Stops the timer and waits for a running round (tick() still works afterwards). */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.running;
  }

  // While anchors fail and nothing but failure entries follow the newest epoch, retry that epoch
  // instead of sealing epochs of failures; once it succeeds, seal the failure entries too, so a
  // recovered anchor leaves no unanchored tail behind.
  private async round(forceSeal = false): Promise<TickResult> {
    const { ledger, anchors } = this.parts;
    const result = await this.parts.transact(() => {
      const prev = lastEpoch(ledger.port);
      if (!forceSeal && prev && onlyFailuresSince(ledger, prev.seq)) return { epoch: prev, sealed: false, lastTs: lastTsOf(ledger.port, prev) };
      // Read before the epoch entry is appended: the ledger is not read again once it is held.
      const head = ledger.head();
      // Anchors already stored at the seq the new epoch would take belong to an epoch the ledger
      // lost (its tail cut outside the gate): anchoring asks only for missing kinds, so they
      // would stand in for the new epoch's and hide the cut.
      if (head && anchorKindsOf(anchors, head.seq + 1).size > 0)
        throw new StoreError(
          `ledger: the store holds anchors for epoch ${head.seq + 1}, an entry the ledger does not hold (its newest entries were removed outside the gate); no epoch is sealed under them: restore the ledger from a backup`,
        );
      const lastTs = head?.ts ?? '';
      return { epoch: sealEpochInTx(ledger), sealed: true, lastTs };
    });
    const epoch = result.epoch;
    if (!epoch || !this.enabled) return { epoch, sealed: result.sealed && !!epoch, outcomes: [] };
    const outcomes = await anchorEpoch(this.parts, epoch, result.lastTs);
    for (const o of outcomes) {
      if (o.ok) continue;
      const k = `${epoch.seq}:${o.kind}`;
      this.parts.log?.(`anchoring: ${o.kind} anchor for epoch ${epoch.seq} failed (${o.reason})`);
      if (this.recorded.has(k)) continue;
      this.recorded.add(k);
      const fields: EntryFields = { kind: 'anchor_failure', epoch: epoch.seq, anchor: o.kind, reason: o.reason };
      await this.parts.transact(() => ledger.appendInTx(fields));
    }
    if (!result.sealed && outcomes.length > 0 && outcomes.every((o) => o.ok)) {
      const head = await this.parts.transact(() => ledger.head());
      if (head && head.seq > epoch.seq) return this.round(true);
    }
    return { epoch, sealed: result.sealed && !!epoch, outcomes };
  }
}

