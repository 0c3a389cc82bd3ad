// The operations database (operations.db): operations of `write` tools with their state and
// results, and the approval receipts already used. Guards against a side effect happening twice
// (a retry after a lost answer, a crash, a race between two gates) and against one receipt
// authorizing two calls. Every method is synchronous and runs inside the caller's transaction:
// the gate reads and writes here in the same BEGIN IMMEDIATE transaction as its ledger entry,
// with operations.db ATTACHed as schema `ops`; the CLI opens the file directly (`main`).
//
// State machine (product.md section 5):
//   (none) ──begin──► pending ──settle──► succeeded | failed
//   pending ──fail (timeout, upstream died, gate error)──► unknown
//   pending ──recoverPending (start-up; owning gate no longer running)──► unknown
//   failed ──retry──► pending            (a new attempt of the same call)
//   unknown | pending(dead owner) ──reconcile──► succeeded | failed   (operator; not-executed → failed)
// Each attempt is numbered: a settle or fail for an attempt that is no longer the pending one
// (late answer, another gate's start-up already declared it unknown) changes nothing.
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import type { Db } from '../store/sqlite.js';
import { StoreError } from '../store/sqlite.js';
import { canonicalize } from '../core/canonical.js';
import { isJsonObject, type JsonValue } from '../core/json.js';
import type { UpstreamReply } from '../core/outcome.js';

export const OPERATION_STATES = ['pending', 'succeeded', 'failed', 'unknown'] as const;
export type OperationState = (typeof OPERATION_STATES)[number];
export type ReconcileOutcome = 'succeeded' | 'failed' | 'not-executed';

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
  /** Why the state is what it is: upstream, timeout, upstream_exit, error, startup, operator:<outcome>. */
  note: string;
  owner: string | null;
  created_at: string;
  updated_at: string;
}

interface Row extends Omit<Operation, 'result' | 'error'> {
  result: string | null;
  error: string | null;
}

export interface UsedReceipt {
  receipt_id: string;
  nonce: string;
  approver: string;
  fingerprint: string;
  /** The signed receipt itself (RFC 8785 JSON), so the approval can be re-verified later. */
  receipt: string;
  used_at: string;
}

/** This process, as the owner of the operations it starts: host, pid and a per-process nonce. */
export const THIS_GATE = `${hostname()}/${process.pid}/${randomBytes(6).toString('hex')}`;

/** Is the gate that owns a pending operation still running? Unknown hosts count as gone. */
export function ownerAlive(owner: string | null): boolean {
  if (!owner) return false;
  if (owner === THIS_GATE) return true;
  const m = /^(.*)\/([0-9]+)\/([0-9a-f]+)$/.exec(owner);
  if (!m || m[1] !== hostname()) return false;
  const pid = Number(m[2]);
  if (pid === process.pid) return false; // an earlier process that had our pid
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function schemaName(schema: string): string {
  if (!/^[a-z_][a-z0-9_]*$/.test(schema)) throw new StoreError(`invalid schema name ${schema}`);
  return schema;
}

/** Attach operations.db to a connection (the gate's ledger connection) as `schema`, WAL, fsync on commit. */
export function attachOperations(db: Db, path: string, schema = 'ops'): void {
  const s = schemaName(schema);
  try {
    db.prepare(`ATTACH DATABASE ? AS ${s}`).run(path);
    db.pragma(`${s}.journal_mode = WAL`);
    db.pragma(`${s}.synchronous = FULL`);
  } catch (e) {
    throw new StoreError(`cannot attach operations database ${path}: ${(e as { code?: string }).code ?? 'error'}`);
  }
  OperationsStore.initSchema(db, s);
}

export class OperationsStore {
  private readonly s: string;
  private readonly stmts;

  constructor(
    readonly db: Db,
    schema = 'main',
    readonly owner: string = THIS_GATE,
  ) {
    this.s = schemaName(schema);
    OperationsStore.initSchema(db, this.s);
    const t = `${this.s}.operations`;
    const u = `${this.s}.used_receipts`;
    this.stmts = {
      get: db.prepare(`SELECT * FROM ${t} WHERE id = ?`),
      insert: db.prepare(
        `INSERT INTO ${t} (id, fingerprint, tool, state, attempts, result, error, note, owner, created_at, updated_at)
         VALUES (?, ?, ?, 'pending', 1, NULL, NULL, 'begin', ?, ?, ?)`,
      ),
      retry: db.prepare(
        `UPDATE ${t} SET state = 'pending', attempts = attempts + 1, result = NULL, error = NULL, note = 'retry', owner = ?, updated_at = ?
         WHERE id = ? AND fingerprint = ? AND state = 'failed' AND attempts = ?`,
      ),
      settle: db.prepare(
        `UPDATE ${t} SET state = ?, result = ?, error = ?, note = 'upstream', updated_at = ?
         WHERE id = ? AND state = 'pending' AND attempts = ?`,
      ),
      fail: db.prepare(`UPDATE ${t} SET state = 'unknown', note = ?, updated_at = ? WHERE id = ? AND state = 'pending' AND attempts = ?`),
      pendingOwners: db.prepare(`SELECT DISTINCT owner FROM ${t} WHERE state = 'pending'`),
      recover: db.prepare(`UPDATE ${t} SET state = 'unknown', note = 'startup', updated_at = ? WHERE state = 'pending' AND owner IS ?`),
      reconcile: db.prepare(`UPDATE ${t} SET state = ?, result = ?, error = NULL, note = ?, updated_at = ? WHERE id = ? AND state = ? AND attempts = ?`),
      list: db.prepare(`SELECT * FROM ${t} ORDER BY updated_at, id LIMIT ?`),
      listState: db.prepare(`SELECT * FROM ${t} WHERE state = ? ORDER BY updated_at, id LIMIT ?`),
      used: db.prepare(`SELECT * FROM ${u} WHERE receipt_id = ?`),
      consume: db.prepare(`INSERT INTO ${u} (receipt_id, nonce, approver, fingerprint, receipt, used_at) VALUES (?, ?, ?, ?, ?, ?)`),
    };
  }

  static initSchema(db: Db, schema = 'main'): void {
    const s = schemaName(schema);
    db.exec(`
      CREATE TABLE IF NOT EXISTS ${s}.operations (
        id          TEXT PRIMARY KEY,
        fingerprint TEXT NOT NULL,
        tool        TEXT NOT NULL,
        state       TEXT NOT NULL CHECK (state IN ('pending', 'succeeded', 'failed', 'unknown')),
        attempts    INTEGER NOT NULL CHECK (attempts >= 1),
        result      TEXT,
        error       TEXT,
        note        TEXT NOT NULL,
        owner       TEXT,
        created_at  TEXT NOT NULL,
        updated_at  TEXT NOT NULL
      ) STRICT;
      CREATE INDEX IF NOT EXISTS ${s}.operations_state ON operations (state);
      CREATE TABLE IF NOT EXISTS ${s}.used_receipts (
        receipt_id  TEXT PRIMARY KEY,
        nonce       TEXT NOT NULL,
        approver    TEXT NOT NULL,
        fingerprint TEXT NOT NULL,
        receipt     TEXT NOT NULL,
        used_at     TEXT NOT NULL
      ) STRICT;
    `);
  }

  get(id: string): Operation | null {
    const r = this.stmts.get.get(id) as Row | undefined;
    return r ? fromRow(r) : null;
  }

  list(state?: OperationState, limit = 10_000): Operation[] {
    const rows = (state ? this.stmts.listState.all(state, limit) : this.stmts.list.all(limit)) as Row[];
    return rows.map(fromRow);
  }

  /** A new operation, pending: durable before the call is forwarded. Returns the attempt number. */
  begin(id: string, fingerprint: string, tool: string, now: number): number {
    const ts = iso(now);
    this.stmts.insert.run(id, fingerprint, tool, this.owner, ts, ts);
    return 1;
  }

  /** A new attempt of a failed operation with the same call. Returns the new attempt number. */
  retry(id: string, fingerprint: string, failedAttempt: number, now: number): number {
    const r = this.stmts.retry.run(this.owner, iso(now), id, fingerprint, failedAttempt);
    if (r.changes !== 1) throw new StoreError('operation changed while deciding');
    return failedAttempt + 1;
  }

  /**
   * The upstream answered attempt `attempt`: a JSON-RPC error or a result with `isError: true`
   * is `failed`, anything else `succeeded`; the answer is stored. Returns the new state, or
   * null when that attempt is no longer pending (nothing changes).
   */
  settle(id: string, attempt: number, reply: UpstreamReply, now: number): OperationState | null {
    const state = outcomeOf(reply);
    const result = reply.result === undefined ? null : canonicalize(reply.result);
    const error = reply.error === undefined ? null : canonicalize(reply.error);
    const r = this.stmts.settle.run(state, result, error, iso(now), id, attempt);
    return r.changes === 1 ? state : null;
  }

  /** The outcome of attempt `attempt` is unknown (timeout, upstream died, gate error). */
  fail(id: string, attempt: number, why: string, now: number): boolean {
    return this.stmts.fail.run(why, iso(now), id, attempt).changes === 1;
  }

  /**
   * Start-up: every `pending` whose gate is no longer running becomes `unknown`: nobody will
   * ever learn its outcome. Pending operations of another live gate on the same home stay
   * pending (they will settle). Returns how many changed.
   */
  recoverPending(now: number, alive: (owner: string | null) => boolean = ownerAlive): number {
    let n = 0;
    for (const { owner } of this.stmts.pendingOwners.all() as { owner: string | null }[]) {
      if (owner === this.owner || !alive(owner)) n += this.stmts.recover.run(iso(now), owner).changes;
    }
    return n;
  }

  /**
   * An operator settles an operation whose outcome is unknown (or pending on a gate that is
   * gone). `not-executed` makes it `failed` without a result, so the same call may run again.
   */
  reconcile(id: string, outcome: ReconcileOutcome, result: JsonValue | null, now: number, alive = ownerAlive): { before: Operation; after: Operation } {
    const before = this.get(id);
    if (!before) throw new ReconcileError('no such operation');
    if (before.state === 'pending' && alive(before.owner))
      throw new ReconcileError('the operation is in flight on a running gate; wait for it to settle');
    if (before.state !== 'unknown' && before.state !== 'pending')
      throw new ReconcileError(`the operation is ${before.state}; only unknown (or orphaned pending) operations are reconciled`);
    let stored: string | null = null;
    if (outcome === 'succeeded') stored = canonicalize(result ?? OPERATOR_RESULT);
    else if (outcome === 'failed' && result !== null) stored = canonicalize(result);
    const state: OperationState = outcome === 'succeeded' ? 'succeeded' : 'failed';
    const r = this.stmts.reconcile.run(state, stored, `operator:${outcome}`, iso(now), id, before.state, before.attempts);
    if (r.changes !== 1) throw new ReconcileError('the operation changed meanwhile; look again');
    return { before, after: this.get(id)! };
  }

  usedReceipt(receiptId: string): UsedReceipt | null {
    return (this.stmts.used.get(receiptId) as UsedReceipt | undefined) ?? null;
  }

  /** Record a receipt as used. The primary key makes a second use fail even across gates. */
  consumeReceipt(u: Omit<UsedReceipt, 'used_at'>, now: number): void {
    this.stmts.consume.run(u.receipt_id, u.nonce, u.approver, u.fingerprint, u.receipt, iso(now));
  }
}

export class ReconcileError extends Error {}

/** What a replay answers when an operator declared success without giving the result. */
export const OPERATOR_RESULT: JsonValue = {
  content: [{ type: 'text', text: 'cloakpipe: this operation was reconciled as succeeded by an operator; its result was not recorded.' }],
};

export function outcomeOf(reply: UpstreamReply): 'succeeded' | 'failed' {
  if (reply.error !== undefined) return 'failed';
  if (reply.result === undefined) return 'failed';
  if (isJsonObject(reply.result) && reply.result.isError === true) return 'failed';
  return 'succeeded';
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

function fromRow(r: Row): Operation {
  return {
    ...r,
    state: r.state as OperationState,
    result: r.result === null ? null : (JSON.parse(r.result) as JsonValue),
    error: r.error === null ? null : (JSON.parse(r.error) as JsonValue),
  };
}
