// Where the scope report reads its facts: the ledger (decisions, results, operator actions) and
// the operations database (stored outcomes). Guards against a report built on a record that was
// edited: the chain and every signature are checked with the gate's public key before a single
// entry is used, and a broken ledger makes every claim resting on it NOT ESTABLISHED.
// A source is anything that yields entries; a home (SQLite) is the first, an exported ledger
// file (JSONL) can be added as another `LedgerSource` without touching the assessment.
import type { KeyObject } from 'node:crypto';
import { existsSync } from 'node:fs';
import { GENESIS_PREV, entryHash, verifyEntrySignature, type Entry } from '../ledger/entry.js';
import { loadPublicKey } from '../ledger/keys.js';
import { operationDigest } from '../operations/operation-id.js';
import { resolveHome } from '../store/home.js';
import { openLedgerSnapshot, openOperationsReader } from '../store/sqlite/store.js';
import type { LedgerSnapshot } from '../store/ports.js';
import { digestJson } from '../core/digest.js';

export class SourceError extends Error {}

export interface LedgerSource {
  /** A short, path-free description for the report. */
  describe: string;
  entries(): Iterable<Entry>;
  publicKey: KeyObject;
  close(): void;
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
  outcome: string;
  tool: string | null;
  fingerprint: string | null;
  operation: string | null;
  operation_state: string | null;
  manifest_digest: string | null;
  /** The gate's mode from the last start-up entry before this decision (null if none). */
  mode: string | null;
}

export interface ResultFact {
  seq: number;
  decision: number;
  outcome: string;
  fingerprint: string | null;
  result_digest: string | null;
}

export interface LedgerFacts {
  describe: string;
  entries: number;
  /** null when the chain and every signature verified. */
  broken: { seq: number; why: string } | null;
  decisions: DecisionFact[];
  /** Result entries by the seq of the decision they settle. */
  results: Map<number, ResultFact[]>;
  /** Operation digests an operator reconciled, with the outcome. */
  reconciled: Map<string, string>;
}

const str = (v: unknown) => (typeof v === 'string' ? v : null);

/** Read and verify a ledger source into the facts the report uses. Never throws on bad entries. */
export function readLedgerFacts(src: LedgerSource): LedgerFacts {
  const facts: LedgerFacts = { describe: src.describe, entries: 0, broken: null, decisions: [], results: new Map(), reconciled: new Map() };
  let prevHash = GENESIS_PREV;
  let expected: number | null = null;
  let mode: string | null = null;
  for (const e of src.entries()) {
    facts.entries++;
    if (!facts.broken) {
      const why =
        expected !== null && e.seq !== expected
          ? `sequence jumps from ${expected - 1} to ${e.seq}`
          : expected === null && e.seq !== 0
            ? `the ledger starts at ${e.seq}, not 0`
            : e.prev !== prevHash
              ? 'prev does not match the previous entry'
              : !verifyEntrySignature(e, src.publicKey)
                ? 'signature does not verify with the gate public key'
                : null;
      if (why) facts.broken = { seq: typeof e.seq === 'number' ? e.seq : -1, why };
    }
    expected = (typeof e.seq === 'number' ? e.seq : -1) + 1;
    prevHash = entryHash(e);
    if (e.kind === 'startup') mode = str(e.mode);
    else if (e.kind === 'decision')
      facts.decisions.push({
        seq: e.seq,
        outcome: String(e.outcome),
        tool: str(e.tool),
        fingerprint: str(e.fingerprint),
        operation: str(e.operation),
        operation_state: str(e.operation_state),
        manifest_digest: str(e.manifest_digest),
        mode,
      });
    else if (e.kind === 'result' && typeof e.decision === 'number') {
      const r: ResultFact = { seq: e.seq, decision: e.decision, outcome: String(e.outcome), fingerprint: str(e.fingerprint), result_digest: str(e.result_digest) };
      facts.results.set(e.decision, [...(facts.results.get(e.decision) ?? []), r]);
    } else if (e.kind === 'operator' && e.action === 'reconcile' && typeof e.operation === 'string') facts.reconciled.set(e.operation, String(e.outcome));
  }
  return facts;
}

/** A gate home: its ledger database and public key, and its operations database. */
export class HomeSources {
  readonly ledger: LedgerSource;
  private readonly opsPath: string;
  private readonly snapshot: LedgerSnapshot;

  constructor(dir: string) {
    const home = resolveHome(dir);
    if (!existsSync(home.ledger)) throw new SourceError(`no ledger in ${home.dir} (run cloakpipe init)`);
    let publicKey: KeyObject;
    try {
      publicKey = loadPublicKey(home.pub);
    } catch (e) {
      throw new SourceError((e as Error).message);
    }
    try {
      this.snapshot = openLedgerSnapshot(home.ledger);
    } catch (e) {
      throw new SourceError((e as Error).message);
    }
    const snap = this.snapshot;
    this.opsPath = home.operations;
    this.ledger = {
      describe: 'home ledger (ledger.db, gate.pub)',
      publicKey,
      entries: function* () {
        for (const body of snap.bodies()) yield JSON.parse(body) as Entry;
      },
      close: () => snap.close(),
    };
  }

  /** Stored outcomes by operation digest, or null when the home has no operations database. */
  storedOutcomes(): Map<string, StoredOutcome> | null {
    if (!existsSync(this.opsPath)) return null;
    const reader = openOperationsReader(this.opsPath);
    try {
      const out = new Map<string, StoredOutcome>();
      for (const op of reader.operations.list(undefined, Number.MAX_SAFE_INTEGER)) {
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
    } finally {
      reader.close();
    }
  }

  close() {
    this.ledger.close();
  }
}
