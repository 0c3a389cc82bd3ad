// Approval requests and the receipts signed for them, in operations.db (ADR 033): the inbox
// server and every gate on the home read and write them through one file.
import type { Db } from './db.js';
import { PRUNE_STEP, type ApprovalRequest, type ApprovalRequestsPort, type ListedRequest, type OfferedReceipt } from '../ports.js';

interface Row extends Omit<ApprovalRequest, 'call' | 'rule'> {
  call_json: string;
  rule_json: string;
}

const fromRow = (r: Row): ApprovalRequest => ({
  id: r.id,
  fingerprint: r.fingerprint,
  tool: r.tool,
  call: r.call_json,
  task: r.task,
  label: r.label,
  entry: Number(r.entry),
  gate: r.gate,
  rule: r.rule_json,
  created_at: r.created_at,
  expires_at: r.expires_at,
});

export class SqliteApprovalRequests implements ApprovalRequestsPort {
  private readonly stmts;

  constructor(db: Db, s: string) {
    this.stmts = {
      record: db.prepare(
        `INSERT INTO ${s}.approval_requests (id, fingerprint, tool, call_json, task, label, entry, gate, rule_json, created_at, expires_at)
         VALUES (@id, @fingerprint, @tool, @call, @task, @label, @entry, @gate, @rule, @created_at, @expires_at)
         ON CONFLICT (fingerprint) DO UPDATE SET tool = excluded.tool, call_json = excluded.call_json, task = excluded.task,
           label = excluded.label, entry = excluded.entry, gate = excluded.gate, rule_json = excluded.rule_json,
           created_at = excluded.created_at, expires_at = excluded.expires_at
         RETURNING id`,
      ),
      get: db.prepare(`SELECT * FROM ${s}.approval_requests WHERE id = ?`),
      pending: db.prepare(`SELECT * FROM ${s}.approval_requests WHERE expires_at > ? ORDER BY created_at DESC, id DESC LIMIT ?`),
      // octet_length reads a value's size from its record header: a long call is never loaded.
      listed: db.prepare(
        `SELECT id, fingerprint, tool, CASE WHEN octet_length(call_json) <= @bytes THEN call_json END AS call_json, octet_length(call_json) AS call_bytes,
           task, label, entry, gate, rule_json, created_at, expires_at
         FROM ${s}.approval_requests WHERE expires_at > @now ORDER BY created_at DESC, id DESC LIMIT @limit`,
      ),
      take: db.prepare(`DELETE FROM ${s}.approval_requests WHERE id = ? AND expires_at > ? RETURNING *`),
      offer: db.prepare(`INSERT INTO ${s}.offered_receipts (receipt_id, fingerprint, receipt, expires_at) VALUES (@receipt_id, @fingerprint, @receipt, @expires_at)`),
      offered: db.prepare(`SELECT * FROM ${s}.offered_receipts WHERE fingerprint = ? ORDER BY receipt_id`),
      pruneRequests: db.prepare(`DELETE FROM ${s}.approval_requests WHERE expires_at <= ?`),
      pruneOffered: db.prepare(`DELETE FROM ${s}.offered_receipts WHERE expires_at <= ?`),
      trimExpired: db.prepare(`DELETE FROM ${s}.approval_requests WHERE id IN (SELECT id FROM ${s}.approval_requests WHERE expires_at <= ? LIMIT ${PRUNE_STEP})`),
      trimOldest: db.prepare(
        `DELETE FROM ${s}.approval_requests WHERE id IN (SELECT id FROM ${s}.approval_requests WHERE expires_at > @now AND id <> @own
           ORDER BY created_at DESC, id DESC LIMIT ${PRUNE_STEP} OFFSET @others)`,
      ),
    };
  }

  record(r: ApprovalRequest): string {
    return (this.stmts.record.get({ ...r }) as { id: string }).id;
  }

  get(id: string): ApprovalRequest | null {
    const r = this.stmts.get.get(id) as Row | undefined;
    return r ? fromRow(r) : null;
  }

  pending(now: string, limit: number): ApprovalRequest[] {
    return (this.stmts.pending.all(now, limit) as Row[]).map(fromRow);
  }

  listed(now: string, limit: number, callBytes: number): ListedRequest[] {
    return (this.stmts.listed.all({ now, limit, bytes: callBytes }) as (Row & { call_bytes: number })[]).map((r) => ({ ...fromRow(r), call: r.call_json, call_bytes: r.call_bytes }));
  }

  take(id: string, now: string): ApprovalRequest | null {
    const r = this.stmts.take.get(id, now) as Row | undefined;
    return r ? fromRow(r) : null;
  }

  offer(r: OfferedReceipt): void {
    this.stmts.offer.run({ ...r });
  }

  offered(fingerprint: string): OfferedReceipt[] {
    return this.stmts.offered.all(fingerprint) as OfferedReceipt[];
  }

  prune(now: string): number {
    return this.stmts.pruneRequests.run(now).changes + this.stmts.pruneOffered.run(now).changes;
  }

  trim(now: string, keep: number, own: string): void {
    this.stmts.trimExpired.run(now);
    this.stmts.trimOldest.run({ now, own, others: Math.max(0, keep - 1) });
  }
}
