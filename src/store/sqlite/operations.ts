// Operations and used receipts in operations.db (ATTACHed to the gate's connection as `ops`).
// Every change is a compare-and-set on (id, state, attempts): see OperationsPort.
import type { Db } from './db.js';
import { canonicalize } from '../../core/canonical.js';
import type { JsonValue } from '../../core/json.js';
import type { Operation, OperationState, OperationsPort, ReceiptsPort, UsedReceipt } from '../ports.js';

interface Row extends Omit<Operation, 'result' | 'error'> {
  result: string | null;
  error: string | null;
}

const json = (v: JsonValue | null) => (v === null ? null : canonicalize(v));

function fromRow(r: Row): Operation {
  return {
    ...r,
    state: r.state as OperationState,
    result: r.result === null ? null : (JSON.parse(r.result) as JsonValue),
    error: r.error === null ? null : (JSON.parse(r.error) as JsonValue),
  };
}

export class SqliteOperations implements OperationsPort {
  private readonly stmts;

  constructor(db: Db, s: string) {
    const t = `${s}.operations`;
    this.stmts = {
      get: db.prepare(`SELECT * FROM ${t} WHERE id = ?`),
      insert: db.prepare(
        `INSERT INTO ${t} (id, fingerprint, tool, state, attempts, result, error, note, owner, created_at, updated_at)
         VALUES (?, ?, ?, 'pending', 1, NULL, NULL, 'begin', ?, ?, ?)`,
      ),
      restart: db.prepare(
        `UPDATE ${t} SET state = 'pending', attempts = attempts + 1, result = NULL, error = NULL, note = ?, owner = ?, updated_at = ?
         WHERE id = ? AND fingerprint = ? AND state = ? AND attempts = ?`,
      ),
      settle: db.prepare(
        `UPDATE ${t} SET state = ?, result = ?, error = ?, note = 'upstream', updated_at = ?
         WHERE id = ? AND state = 'pending' AND attempts = ?`,
      ),
      unknown: db.prepare(`UPDATE ${t} SET state = 'unknown', note = ?, updated_at = ? WHERE id = ? AND state = 'pending' AND attempts = ?`),
      pendingOwners: db.prepare(`SELECT DISTINCT owner FROM ${t} WHERE state = 'pending'`),
      recover: db.prepare(`UPDATE ${t} SET state = 'unknown', note = 'startup', updated_at = ? WHERE state = 'pending' AND owner IS ?`),
      reconcile: db.prepare(`UPDATE ${t} SET state = ?, result = ?, error = NULL, note = ?, updated_at = ? WHERE id = ? AND state = ? AND attempts = ?`),
      list: db.prepare(`SELECT * FROM ${t} ORDER BY updated_at, id LIMIT ?`),
      listState: db.prepare(`SELECT * FROM ${t} WHERE state = ? ORDER BY updated_at, id LIMIT ?`),
    };
  }

  get(id: string): Operation | null {
    const r = this.stmts.get.get(id) as Row | undefined;
    return r ? fromRow(r) : null;
  }

  list(state: OperationState | undefined, limit: number): Operation[] {
    const rows = (state ? this.stmts.listState.all(state, limit) : this.stmts.list.all(limit)) as Row[];
    return rows.map(fromRow);
  }

  insert(op: { id: string; fingerprint: string; tool: string; owner: string; at: string }): void {
    this.stmts.insert.run(op.id, op.fingerprint, op.tool, op.owner, op.at, op.at);
  }

  restart(id: string, fingerprint: string, from: { state: 'succeeded' | 'failed'; attempts: number }, note: string, owner: string, at: string): boolean {
    return this.stmts.restart.run(note, owner, at, id, fingerprint, from.state, from.attempts).changes === 1;
  }

  settle(id: string, attempt: number, to: { state: 'succeeded' | 'failed'; result: JsonValue | null; error: JsonValue | null }, at: string): boolean {
    return this.stmts.settle.run(to.state, json(to.result), json(to.error), at, id, attempt).changes === 1;
  }

  markUnknown(id: string, attempt: number, note: string, at: string): boolean {
    return this.stmts.unknown.run(note, at, id, attempt).changes === 1;
  }

  pendingOwners(): (string | null)[] {
    return (this.stmts.pendingOwners.all() as { owner: string | null }[]).map((r) => r.owner);
  }

  recoverOwner(owner: string | null, at: string): number {
    return this.stmts.recover.run(at, owner).changes;
  }

  reconcile(id: string, from: { state: OperationState; attempts: number }, to: { state: 'succeeded' | 'failed'; result: JsonValue | null; note: string }, at: string): boolean {
    return this.stmts.reconcile.run(to.state, json(to.result), to.note, at, id, from.state, from.attempts).changes === 1;
  }
}

export class SqliteReceipts implements ReceiptsPort {
  private readonly usedStmt;
  private readonly consumeStmt;

  constructor(db: Db, s: string) {
    this.usedStmt = db.prepare(`SELECT * FROM ${s}.used_receipts WHERE receipt_id = ?`);
    this.consumeStmt = db.prepare(`INSERT INTO ${s}.used_receipts (receipt_id, nonce, approver, fingerprint, receipt, used_at) VALUES (?, ?, ?, ?, ?, ?)`);
  }

  used(receiptId: string): UsedReceipt | null {
    return (this.usedStmt.get(receiptId) as UsedReceipt | undefined) ?? null;
  }

  consume(u: Omit<UsedReceipt, 'used_at'>, at: string): void {
    this.consumeStmt.run(u.receipt_id, u.nonce, u.approver, u.fingerprint, u.receipt, at);
  }
}
