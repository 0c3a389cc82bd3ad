// The store's ports: everything the gate, the ledger and the CLI keep durably, as interfaces with
// no SQL and no driver in them. `store/sqlite/` implements them (the embedded default); a second
// store (PostgreSQL for a fleet) is one more folder implementing the same `Store` and passing the
// same contract tests (test/store/contract/). The domain rules live above: operations/ (the state
// machine), pins/, ledger/ (signing, chaining, epochs); a port only keeps and finds rows.
//
// Port methods are synchronous and run inside `transact` (or alone, each its own transaction):
// a decision reads and writes through them and appends its entry in one transaction (ADR 002),
// and `transact` resolves only once that transaction is durable. Rows a port returns are plain
// data; ids are stored as given (they may be argument values: only their digests leave the store).
import type { JsonValue } from '../core/json.js';

/** The store could not do what was asked (missing, damaged, replaced, or a write failed). */
export class StoreError extends Error {}

// ── operations (product.md section 5) ─────────────────────────────────────────────────────────

export const OPERATION_STATES = ['pending', 'succeeded', 'failed', 'unknown'] as const;
export type OperationState = (typeof OPERATION_STATES)[number];

export interface Operation {
  id: string;
  fingerprint: string;
  tool: string;
  state: OperationState;
  attempts: number;
  /** The stored result (`succeeded`, or a failed call's result) as JSON, or null. */
  result: JsonValue | null;
  /** The stored JSON-RPC error of a failed call, or null. */
  error: JsonValue | null;
  /** Why the state is what it is: begin, retry, upstream, timeout, upstream_exit, error, cancelled, startup, operator:<outcome>. */
  note: string;
  owner: string | null;
  created_at: string;
  updated_at: string;
}

/**
 * Every change is a compare-and-set on (id, state, attempts): it returns false (changes nothing)
 * when the row is no longer what the caller read, so a late answer or a second gate cannot
 * overwrite a newer attempt.
 */
export interface OperationsPort {
  get(id: string): Operation | null;
  /** Oldest change first. */
  list(state: OperationState | undefined, limit: number): Operation[];
  /** A new operation, pending, attempt 1. Throws when the id exists (also another gate's). */
  insert(op: { id: string; fingerprint: string; tool: string; owner: string; at: string }): void;
  /** A settled attempt (`from`) of the same call becomes pending again as attempt + 1. */
  restart(id: string, fingerprint: string, from: { state: 'succeeded' | 'failed'; attempts: number }, note: string, owner: string, at: string): boolean;
  /** The pending attempt settles with its stored answer. */
  settle(id: string, attempt: number, to: { state: 'succeeded' | 'failed'; result: JsonValue | null; error: JsonValue | null }, at: string): boolean;
  /** The pending attempt's outcome is unknown. */
  markUnknown(id: string, attempt: number, note: string, at: string): boolean;
  /** Owners with pending operations. */
  pendingOwners(): (string | null)[];
  /** Every pending operation of `owner` becomes unknown (note `startup`); returns how many. */
  recoverOwner(owner: string | null, at: string): number;
  /** An operator settles an operation found in `from`. */
  reconcile(id: string, from: { state: OperationState; attempts: number }, to: { state: 'succeeded' | 'failed'; result: JsonValue | null; note: string }, at: string): boolean;
}

// ── approval receipts ─────────────────────────────────────────────────────────────────────────

export interface UsedReceipt {
  receipt_id: string;
  nonce: string;
  approver: string;
  fingerprint: string;
  /** The signed receipt itself (RFC 8785 JSON), so the approval can be re-verified later. */
  receipt: string;
  used_at: string;
}

export interface ReceiptsPort {
  used(receiptId: string): UsedReceipt | null;
  /** Record a receipt as used; throws when it already is (single use, across gates too). */
  consume(u: Omit<UsedReceipt, 'used_at'>, at: string): void;
}

// ── requests waiting for a person (the approval inbox, inbox.md; ADR 033) ─────────────────────

/**
 * A call refused `approval_required`, as a person must see it to approve it. The only place its
 * argument values are kept: ledger, logs and spans hold digests. Deleted when decided or expired,
 * or when newer ones push it out of the bound the gate keeps (ADR 058).
 */
export interface ApprovalRequest {
  /** Random, URL-safe: the inbox's name for it (never derived from the call). */
  id: string;
  fingerprint: string;
  tool: string;
  /** The call as it would be forwarded: RFC 8785 JSON of {"tool", "arguments"}. */
  call: string;
  task: string | null;
  /** The session's label when it was refused. */
  label: string;
  /** The refusal's ledger entry (seq) in the chain of `gate` (null: the home's only chain). */
  entry: number;
  gate: string | null;
  /** RFC 8785 JSON of the manifest rule requiring approval: {release, manifest_digest, tool, declaration}. */
  rule: string;
  created_at: string;
  expires_at: string;
}

/**
 * A pending request as the inbox lists it: its call only when that is at most the bytes asked
 * for. A call may be megabytes (the frame limit), and the list holds up to the bound of requests
 * (ADR 058): read whole every poll and every listing, they could take the inbox's memory.
 */
export interface ListedRequest extends Omit<ApprovalRequest, 'call'> {
  /** The call, or null when it is longer than asked for (read it with get). */
  call: string | null;
  /** The call's length in UTF-8 bytes. */
  call_bytes: number;
}

/** A receipt signed in the inbox, waiting where the gate takes receipts until it expires. */
export interface OfferedReceipt {
  receipt_id: string;
  fingerprint: string;
  /** The signed receipt (RFC 8785 JSON). */
  receipt: string;
  expires_at: string;
}

export interface ApprovalRequestsPort {
  /**
   * Record a request. One pending request per fingerprint: the same call refused again refreshes
   * it (entry, label, times) and keeps its id. Returns the id in force.
   */
  record(r: ApprovalRequest): string;
  get(id: string): ApprovalRequest | null;
  /** Unexpired requests at `now` (ISO time), newest first, at most `limit`. */
  pending(now: string, limit: number): ApprovalRequest[];
  /** The same requests with each call only when it is at most `callBytes` long (0: none). */
  listed(now: string, limit: number, callBytes: number): ListedRequest[];
  /**
   * Remove an unexpired request to decide it; null when it is gone, expired or taken by another
   * decision first (a decision is final: exactly one taker).
   */
  take(id: string, now: string): ApprovalRequest | null;
  /** Put a signed receipt where the gate takes receipts. */
  offer(r: OfferedReceipt): void;
  /** The receipts offered for this fingerprint (expired ones too, until pruned: the gate says why they fail). */
  offered(fingerprint: string): OfferedReceipt[];
  /** Delete requests and offered receipts expired at `now`; returns how many rows went. */
  prune(now: string): number;
  /**
   * The gate's own clean-up, in the transaction that records `own` (ADR 058): deletes requests
   * expired at `now`, then the oldest unexpired ones (newest first, as `pending` orders them)
   * past the newest `keep`, never `own`; at most PRUNE_STEP rows of each kind at a time. Reads
   * nothing first: on PostgreSQL it is a write of the job, skipping rows another transaction
   * holds, and a read later in the same job may still see what it deletes.
   */
  trim(now: string, keep: number, own: string): void;
}

// ── rate windows (product.md section 4) ───────────────────────────────────────────────────────

export const MINUTE_MS = 60_000;
export const HOUR_MS = 3_600_000;
export const DAY_MS = 86_400_000;
/**
 * Rate rows one prune drops at most. A minute of calls at a high rate is many rows (60,000 at
 * 1,000 calls/s, ~70 ms to delete on SQLite here), and a prune runs inside a call's
 * transaction: a longer backlog goes in steps, one with each following call. The gate's trim
 * of approval requests goes in the same steps (ADR 058).
 */
export const PRUNE_STEP = 512;

export interface WindowCounts {
  minute: number;
  hour: number;
  day: number;
}

export interface RateCounts {
  /** Allowed calls of this tool in this task. */
  calls: WindowCounts;
  /** Allowed calls of all tools in this task. */
  callsAll: WindowCounts;
}

/** Which counts a decision reads (the policies' own reads): one not read may come back as 0. */
export interface CountsRead {
  calls: boolean;
  callsAll: boolean;
}

/**
 * `now` is the caller's clock (ms since the epoch). A store shared by gates on several hosts
 * counts and stamps by one clock of its own instead (PostgreSQL: the database's, read in the
 * transaction; ADR 060), since the hosts' clocks differ; on SQLite the host's clock is the only one.
 */
export interface RatesPort {
  /** Allowed calls in the sliding windows ending at `now`; `read`: which of the two the caller
   *  needs (default both), so a store may leave the other uncounted (zeros). */
  counts(taskId: string | null, tool: string, now: number, read?: CountsRead): RateCounts;
  /** Count one allowed call at `now`. */
  record(taskId: string | null, tool: string, now: number): void;
}

// ── tool-definition pins (product.md section 9) ───────────────────────────────────────────────

export interface PinRow {
  release: string;
  tool: string;
  digest: string;
  /** The last definition seen that differs from the pin, awaiting review; null when none. */
  observed: string | null;
  pinned_at: number;
}

export interface PinsPort {
  get(release: string, tool: string): PinRow | null;
  /** By release, then tool. */
  list(): PinRow[];
  insert(release: string, tool: string, digest: string, now: number): void;
  setObserved(release: string, tool: string, observed: string | null): void;
  /** The observed definition becomes the pin; false when none was awaiting review. */
  promote(release: string, tool: string, now: number): boolean;
}

// ── the ledger: entries, epochs, anchors (product.md section 7) ───────────────────────────────

/** One stored entry: its signed RFC 8785 body and the columns found by. */
export interface LedgerRow {
  seq: number;
  ts: string;
  kind: string;
  /** sha256:HEX of the body (signature included). */
  hash: string;
  body: string;
}

export interface LedgerPort {
  /** The newest entry, or null for an empty ledger. */
  head(): LedgerRow | null;
  /** Throws when `seq` is taken (two writers raced: the transaction fails whole). */
  insert(row: LedgerRow): void;
  count(): number;
  /** Bodies in seq order from `fromSeq`, at most `limit`. */
  bodies(fromSeq: number, limit: number): Iterable<string>;
  /** (seq, body) in seq order for first ≤ seq ≤ last. */
  between(first: number, last: number): Iterable<{ seq: number; body: string }>;
  /** The newest entry of a kind by the unsigned kind column (e.g. the last epoch), or null: a reader checks its body. */
  lastOfKind(kind: string): LedgerRow | null;
}

/** One stored anchor of an epoch: `data` is the anchor's JSON as ledger/ wrote it. */
export interface AnchorRow {
  epoch: number;
  kind: string;
  data: string;
}

export interface AnchorsPort {
  /** Stores (or replaces) the anchor of one kind for an epoch. */
  put(row: AnchorRow): void;
  kinds(epoch: number): Set<string>;
  /** By epoch, then kind. */
  all(): Iterable<AnchorRow>;
}

/** A consistent read of the whole ledger (entries and anchors), for export and verify. */
/** A ledger row as stored: the signed body and the columns the gate looks rows up by, as they read (any type). */
export interface StoredRow {
  seq: number;
  ts: unknown;
  kind: unknown;
  hash: unknown;
  body: string;
}

export interface LedgerSnapshot {
  total: number;
  /** Bodies in seq order (from `fromSeq`, else from the lowest row, even one below 0; at most `limit`). */
  bodies(fromSeq?: number, limit?: number): Iterable<string>;
  /** bodies() with each row's unsigned columns: verify's workers check them against the body they sign. */
  rows?(fromSeq?: number, limit?: number): Iterable<StoredRow>;
  /** Row keys (seq) in order, without bodies: where verify's workers start reading their ranges. */
  keys?(): Iterable<number>;
  /** The first row key and the row count when the keys bodies() reads run without a gap, else null. */
  span?(): { first: number; count: number } | null;
  anchors(): Iterable<AnchorRow>;
  /** How many anchors() yields, counted without reading them (a token is kilobytes). */
  anchorCount(): number;
  /**
   * The first row whose unsigned columns (seq, ts, kind, hash: what the gate looks rows up by)
   * differ from its signed body, and which: a row edited outside the gate. Null when none.
   */
  editedRow?(): { seq: number; columns: string[] } | null;
  close(): void;
}

// ── the store ─────────────────────────────────────────────────────────────────────────────────

/** Runs `fn` in one write transaction; resolves after it committed durably, rejects when it did not. */
export type Transact = <T>(fn: () => T) => Promise<T>;

/**
 * Something above the store that holds writes of the open transaction in memory and writes them
 * just before COMMIT (the ledger's entries, signed as one chain once every job of a group ran:
 * ADR 042). The store calls it around each group; `prepare` may take its time (a signature
 * made off the main thread): the transaction stays open, and nothing else joins it meanwhile.
 */
export interface TxParticipant {
  /** A group starts (its transaction is open). */
  begin(): void;
  /** A job starts: a mark to roll back to if it throws. */
  mark(): number;
  /** The job threw (its savepoint rolled back): forget what it added since `mark`. */
  rollback(mark: number): void;
  /** Every job ran: write what is held. Throws (or rejects): the whole group rolls back. */
  prepare(): void | Promise<void>;
  /** The group ended, committed or not: hold nothing. */
  finish(committed: boolean): void;
}

export interface Store {
  readonly ledger: LedgerPort;
  readonly operations: OperationsPort;
  readonly receipts: ReceiptsPort;
  readonly approvalRequests: ApprovalRequestsPort;
  readonly rates: RatesPort;
  readonly pins: PinsPort;
  readonly anchors: AnchorsPort;
  /**
   * One write transaction. Calls queued together may share one commit (group commit); each runs
   * isolated: one that throws rolls back alone and rejects alone.
   */
  transact: Transact;
  /**
   * The same, for work that need not be durable before its caller goes on (a call's result
   * entry and settlement, ADR 017): it may wait for the next transaction, which commits it
   * first. A store without it gets `transact`.
   */
  transactLater?: Transact;
  /**
   * Throws StoreError when the store this process opened is no longer the one on disk (a file
   * deleted or replaced under a running gate): nothing may be decided on a store nobody will read.
   */
  assertIntact(): void;
  /**
   * Takes part in every later group (ADR 042). A store whose transactions cannot wait for a
   * participant has no `enlist`: the ledger then signs each entry as it is appended.
   */
  enlist?(participant: TxParticipant): void;
  close(): void;
}
