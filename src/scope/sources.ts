// Where the scope report reads its facts: the ledger (decisions, results, operator actions) and
// the operations database (stored outcomes). Guards against a report built on a record that was
// edited: the facts are the entries `verify` itself hands over once each passed its checks
// (ledger/verify, the one verifier: canonical bytes, chain, signatures, epochs), and a ledger
// that fails verification makes every claim resting on it NOT ESTABLISHED.
import type { KeyObject } from 'node:crypto';
import { existsSync } from 'node:fs';
import type { DecisionOutcome, LedgerEntry, ResultOutcome } from '../core/entries.js';
import type { Mode } from '../core/outcome.js';
import { loadPublicKey } from '../ledger/keys.js';
import { verifyLedger, type VerifySource } from '../ledger/verify/index.js';
import { operationDigest } from '../operations/operation-id.js';
import { resolveHome } from '../store/home.js';
import { openOperationsReader } from '../store/sqlite/store.js';
import type { Operation } from '../store/ports.js';
import { digestJson } from '../core/digest.js';

export class SourceError extends Error {}

/** A ledger to read: where it is and the gate key it must verify with. */
export interface LedgerSource {
  /** A short, path-free description for the report. */
  describe: string;
  source: VerifySource;
  publicKey: KeyObject;
}

/** A stored outcome, keyed by operation digest (ids are argument values: never shown). */
export interface StoredOutcome {
  fingerprint: string;
  tool: string;
  state: string;
  note: string;
  /** Digest of what the gate's result entry would carry for this outcome, when one is stored. */
  result_digest: string | null;
}

export interface DecisionFact {
  seq: number;
  outcome: DecisionOutcome;
  tool: string | null;
  fingerprint: string | null;
  operation: string | null;
  operation_state: string | null;
  manifest_digest: string | null;
  /** The gate's mode from the last start-up entry before this decision (null if none). */
  mode: Mode | null;
}

export interface ResultFact {
  seq: number;
  decision: number;
  outcome: ResultOutcome;
  fingerprint: string | null;
  result_digest: string | null;
}

export interface LedgerFacts {
  describe: string;
  entries: number;
  /** null when the chain and every signature verified. */
  broken: { seq: number; why: string } | null;
  /** It holds no entry: nothing failed, nothing in it is evidence (a home no gate has run in yet). */
  empty: boolean;
  decisions: DecisionFact[];
  /** Result entries by the seq of the decision they settle. */
  results: Map<number, ResultFact[]>;
  /** Operation digests an operator reconciled, with the outcome. */
  reconciled: Map<string, string>;
}

/** Verify a ledger and read the facts the report uses from its verified entries. */
export async function readLedgerFacts(src: LedgerSource): Promise<LedgerFacts> {
  const facts: LedgerFacts = { describe: src.describe, entries: 0, broken: null, empty: false, decisions: [], results: new Map(), reconciled: new Map() };
  let mode: DecisionFact['mode'] = null;
  const take = (e: LedgerEntry) => {
    switch (e.kind) {
      case 'startup':
        mode = e.mode;
        break;
      case 'decision':
        facts.decisions.push({
          seq: e.seq,
          outcome: e.outcome,
          tool: e.tool ?? null,
          fingerprint: e.fingerprint ?? null,
          operation: e.operation ?? null,
          operation_state: e.operation_state ?? null,
          manifest_digest: e.manifest_digest,
          mode,
        });
        break;
      case 'result':
        facts.results.set(e.decision, [
          ...(facts.results.get(e.decision) ?? []),
          { seq: e.seq, decision: e.decision, outcome: e.outcome, fingerprint: e.fingerprint, result_digest: e.result_digest ?? null },
        ]);
        break;
      case 'operator':
        if (e.action === 'reconcile') facts.reconciled.set(e.operation, e.outcome);
        break;
    }
  };
  // A verified entry was written by the gate key holder, so its kind's fields are as typed.
  // An empty ledger is reported as empty (ADR 087 keeps it from reading as verified), not broken.
  const report = await verifyLedger(src.source, { publicKey: src.publicKey, allowEmpty: true, onEntry: (e) => take(e as unknown as LedgerEntry) });
  facts.entries = report.entries;
  facts.empty = !report.failure && report.entries === 0;
  if (report.failure) {
    const f = report.failure;
    facts.broken = { seq: f.seq ?? report.entries, why: `${f.code}: ${f.detail}` };
  }
  return facts;
}

/** A gate home: its ledger database and public key, and its operations database. */
export class HomeSources {
  readonly ledger: LedgerSource;
  private readonly opsPath: string;

  constructor(dir: string) {
    const home = resolveHome(dir);
    if (!existsSync(home.ledger)) throw new SourceError(`no ledger in ${home.dir} (run cloakpipe init)`);
    let publicKey: KeyObject;
    try {
      publicKey = loadPublicKey(home.pub);
    } catch (e) {
      throw new SourceError((e as Error).message);
    }
    this.opsPath = home.operations;
    this.ledger = { describe: 'home ledger (ledger.db, gate.pub)', source: { ledgerDb: home.ledger }, publicKey };
  }

  /** Stored outcomes by operation digest, or null when the home has no operations database. */
  storedOutcomes(): Map<string, StoredOutcome> | null {
    if (!existsSync(this.opsPath)) return null;
    const reader = openOperationsReader(this.opsPath);
    try {
      return outcomesOf(reader.operations.list(undefined, Number.MAX_SAFE_INTEGER));
    } finally {
      reader.close();
    }
  }
}

/** Stored outcomes by operation digest, from the operations a store holds (a home's, or a fleet's). */
export function outcomesOf(ops: Iterable<Operation>): Map<string, StoredOutcome> {
  const out = new Map<string, StoredOutcome>();
  for (const op of ops) {
    const stored = op.error ?? op.result;
    out.set(operationDigest(op.id), {
      fingerprint: op.fingerprint,
      tool: op.tool,
      state: op.state,
      note: op.note,
      result_digest: op.state === 'succeeded' || op.state === 'failed' ? digestJson(stored ?? null) : null,
    });
  }
  return out;
}
