// Approval requests and offered receipts on PostgreSQL (ADR 033), over the unit of work
// (unit.ts): reads are facts fetched in the job's transaction (a request about to be decided is
// locked FOR UPDATE), writes are buffered; taking a request is a delete that must hit its row,
// so of two inbox servers deciding one request at once exactly one wins.
import { PRUNE_STEP, StoreError, type ApprovalRequest, type ApprovalRequestsPort, type ListedRequest, type OfferedReceipt } from '../ports.js';
import { dec, decN, enc, encN } from './ports.js';
import { Conflict, expectRows, type UnitSlot } from './unit.js';

const key = (...parts: unknown[]) => JSON.stringify(parts);

/**
 * A deletion's "now" ($1, the caller's clock) bounded by the database's (clock_ms, as rate windows), as the
 * stored stamps' ISO text: a gate whose clock runs ahead deleted every other gate's requests
 * (and the inbox's signed receipts) as expired while they were still waiting for a person.
 */
const bounded = (s: string) => `least($1::text, to_char(to_timestamp(${s}.clock_ms() / 1000.0) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))`;

interface Row {
  id: string;
  fingerprint: string;
  tool: string;
  call_json: string;
  task: string | null;
  label: string;
  entry: string | number;
  gate: string | null;
  rule_json: string;
  created_at: string;
  expires_at: string;
}

const fromRow = (r: Row): ApprovalRequest => ({
  id: r.id,
  fingerprint: r.fingerprint,
  tool: dec(r.tool),
  call: r.call_json,
  task: decN(r.task),
  label: dec(r.label),
  entry: Number(r.entry),
  gate: decN(r.gate),
  rule: r.rule_json,
  created_at: r.created_at,
  expires_at: r.expires_at,
});

const newestFirst = (a: { id: string; created_at: string }, b: { id: string; created_at: string }) =>
  a.created_at < b.created_at ? 1 : a.created_at > b.created_at ? -1 : a.id < b.id ? 1 : a.id > b.id ? -1 : 0;

export class PgApprovalRequests implements ApprovalRequestsPort {
  constructor(
    private readonly slot: UnitSlot,
    private readonly s: string,
  ) {}

  /** This run's changes: requests by id (null: deleted), offered receipts added. */
  private local() {
    return this.slot.get().local('approvals', () => ({ requests: new Map<string, ApprovalRequest | null>(), offered: [] as OfferedReceipt[] }));
  }

  private byFingerprint(fingerprint: string): ApprovalRequest | null {
    for (const r of this.local().requests.values()) if (r && r.fingerprint === fingerprint) return r;
    const row = this.slot.get().fact<ApprovalRequest | null>(key('request-fp', fingerprint), async (c) => {
      const r = await c.query<Row>(`SELECT * FROM ${this.s}.approval_requests WHERE fingerprint = $1 FOR UPDATE`, [fingerprint]);
      return r.rows[0] ? fromRow(r.rows[0]) : null;
    });
    if (row && this.local().requests.has(row.id)) return this.local().requests.get(row.id) ?? null;
    return row;
  }

  record(r: ApprovalRequest): string {
    // The receipts this run decided on. A refusal read them before it locked the request: an
    // approval that committed in between (it takes the request and offers a receipt) left this
    // refusal stale, and recording it put the approved call back in the inbox, waiting (READ
    // COMMITTED: the check below is a statement after the lock, so it sees that approval).
    const seen = new Set(this.offered(r.fingerprint).map((o) => o.receipt_id));
    const have = this.byFingerprint(r.fingerprint);
    this.slot.get().write(async (c) => {
      const now = await c.query<{ receipt_id: string }>(`SELECT receipt_id FROM ${this.s}.offered_receipts WHERE fingerprint = $1`, [r.fingerprint]);
      // The job runs again, and decides on the receipt it now finds.
      if (now.rows.some((o) => !seen.has(o.receipt_id))) throw new Conflict('a receipt was offered for this call while it was being decided');
    });
    const params = [enc(r.tool), r.call, encN(r.task), enc(r.label), r.entry, encN(r.gate), r.rule, r.created_at, r.expires_at];
    if (have) {
      const next = { ...r, id: have.id };
      this.slot.get().write((c) =>
        expectRows(
          c,
          1,
          `UPDATE ${this.s}.approval_requests SET tool = $2, call_json = $3, task = $4, label = $5, entry = $6, gate = $7, rule_json = $8, created_at = $9, expires_at = $10
           WHERE id = $1`,
          [have.id, ...params],
        ),
      );
      this.local().requests.set(have.id, next);
      return have.id;
    }
    // Absence cannot be locked: two gates recording the same call at once both insert, and the
    // unique fingerprint fails the second whole (retried, it then refreshes the first's row).
    this.slot.get().write(async (c) => {
      await c.query(
        `INSERT INTO ${this.s}.approval_requests (id, fingerprint, tool, call_json, task, label, entry, gate, rule_json, created_at, expires_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
        [r.id, r.fingerprint, ...params],
      );
    });
    this.local().requests.set(r.id, { ...r });
    return r.id;
  }

  get(id: string): ApprovalRequest | null {
    const mine = this.local().requests;
    if (mine.has(id)) return mine.get(id) ?? null;
    return this.slot.get().fact<ApprovalRequest | null>(key('request', id), async (c) => {
      const r = await c.query<Row>(`SELECT * FROM ${this.s}.approval_requests WHERE id = $1 FOR UPDATE`, [id]);
      return r.rows[0] ? fromRow(r.rows[0]) : null;
    });
  }

  pending(now: string, limit: number): ApprovalRequest[] {
    const rows = this.slot.get().fact<ApprovalRequest[]>(key('requests', now, limit), async (c) =>
      (await c.query<Row>(`SELECT * FROM ${this.s}.approval_requests WHERE expires_at > $1 ORDER BY created_at DESC, id DESC LIMIT $2`, [now, limit])).rows.map(fromRow),
    );
    return this.withLocal(rows, now, limit, (r) => r);
  }

  listed(now: string, limit: number, callBytes: number): ListedRequest[] {
    // octet_length of a stored text is its size from the TOAST header: a long call is never read.
    const rows = this.slot.get().fact<ListedRequest[]>(key('listed', now, limit, callBytes), async (c) =>
      (
        await c.query<Row & { call_bytes: number }>(
          `SELECT id, fingerprint, tool, CASE WHEN octet_length(call_json) <= $3 THEN call_json END AS call_json, octet_length(call_json) AS call_bytes,
             task, label, entry, gate, rule_json, created_at, expires_at
           FROM ${this.s}.approval_requests WHERE expires_at > $1 ORDER BY created_at DESC, id DESC LIMIT $2`,
          [now, limit, callBytes],
        )
      ).rows.map((r) => ({ ...fromRow(r), call: r.call_json, call_bytes: Number(r.call_bytes) })),
    );
    return this.withLocal(rows, now, limit, (r) => {
      const bytes = Buffer.byteLength(r.call);
      return { ...r, call: bytes <= callBytes ? r.call : null, call_bytes: bytes };
    });
  }

  /** Rows read, with this run's own records and takes over them: unexpired, newest first, at most `limit`. */
  private withLocal<T extends { id: string; created_at: string; expires_at: string }>(rows: T[], now: string, limit: number, of: (r: ApprovalRequest) => T): T[] {
    const out = new Map(rows.map((r) => [r.id, r] as [string, T | null]));
    for (const [id, r] of this.local().requests) out.set(id, r && of(r));
    return [...out.values()]
      .filter((r): r is T => r !== null && r.expires_at > now)
      .sort(newestFirst)
      .slice(0, limit);
  }

  take(id: string, now: string): ApprovalRequest | null {
    const r = this.get(id);
    if (!r || r.expires_at <= now) return null;
    this.slot.get().write((c) => expectRows(c, 1, `DELETE FROM ${this.s}.approval_requests WHERE id = $1`, [id]));
    this.local().requests.set(id, null);
    return r;
  }

  offer(r: OfferedReceipt): void {
    if (this.offered(r.fingerprint).some((o) => o.receipt_id === r.receipt_id)) throw new StoreError('receipt already offered');
    this.slot.get().write(async (c) => {
      await c.query(`INSERT INTO ${this.s}.offered_receipts (receipt_id, fingerprint, receipt, expires_at) VALUES ($1, $2, $3, $4)`, [
        r.receipt_id,
        r.fingerprint,
        r.receipt,
        r.expires_at,
      ]);
    });
    this.local().offered.push({ ...r });
  }

  offered(fingerprint: string): OfferedReceipt[] {
    const rows = this.slot.get().fact<OfferedReceipt[]>(key('offered', fingerprint), async (c) =>
      (
        await c.query<OfferedReceipt>(`SELECT receipt_id, fingerprint, receipt, expires_at FROM ${this.s}.offered_receipts WHERE fingerprint = $1 ORDER BY receipt_id`, [
          fingerprint,
        ])
      ).rows,
    );
    const mine = this.local().offered.filter((o) => o.fingerprint === fingerprint);
    return [...rows, ...mine].sort((a, b) => (a.receipt_id < b.receipt_id ? -1 : a.receipt_id > b.receipt_id ? 1 : 0));
  }

  prune(now: string): number {
    const expired = this.slot.get().fact<{ requests: string[]; offered: string[] }>(key('expired', now), async (c) => ({
      requests: (await c.query<{ id: string }>(`SELECT id FROM ${this.s}.approval_requests WHERE expires_at <= ${bounded(this.s)} FOR UPDATE`, [now])).rows.map((r) => r.id),
      offered: (await c.query<{ receipt_id: string }>(`SELECT receipt_id FROM ${this.s}.offered_receipts WHERE expires_at <= ${bounded(this.s)} FOR UPDATE`, [now])).rows.map(
        (r) => r.receipt_id,
      ),
    }));
    const mine = this.local();
    const requests = expired.requests.filter((id) => !mine.requests.has(id));
    if (requests.length > 0) {
      this.slot.get().write(async (c) => {
        await c.query(`DELETE FROM ${this.s}.approval_requests WHERE id = ANY($1::text[])`, [requests]);
      });
      for (const id of requests) mine.requests.set(id, null);
    }
    if (expired.offered.length > 0)
      this.slot.get().write(async (c) => {
        await c.query(`DELETE FROM ${this.s}.offered_receipts WHERE receipt_id = ANY($1::text[])`, [expired.offered]);
      });
    return requests.length + expired.offered.length;
  }

  /**
   * Writes only (no fact, so no round trip before the decision commits). A row another
   * transaction holds (a gate refreshing it, an inbox deciding it) is skipped, never waited for.
   * Each gate deletes only what is past the bound in what its statement sees: gates recording at
   * once never wait for each other, and each transaction open at once may leave up to `keep` of
   * its own view (another's new requests are invisible to it) until the next trim.
   */
  trim(now: string, keep: number, own: string): void {
    const t = `${this.s}.approval_requests`;
    this.slot.get().write(async (c) => {
      await c.query(`DELETE FROM ${t} WHERE id IN (SELECT id FROM ${t} WHERE expires_at <= ${bounded(this.s)} LIMIT ${PRUNE_STEP} FOR UPDATE SKIP LOCKED)`, [now]);
      // The rows past the bound are chosen first, then locked: locking in the same query would
      // lock the kept ones too (OFFSET skips rows after they are locked).
      await c.query(
        `DELETE FROM ${t} WHERE id IN (SELECT id FROM ${t} WHERE id IN (
           SELECT id FROM ${t} WHERE expires_at > ${bounded(this.s)} AND id <> $2 ORDER BY created_at DESC, id DESC OFFSET $3 LIMIT ${PRUNE_STEP}) FOR UPDATE SKIP LOCKED)`,
        [now, own, Math.max(0, keep - 1)],
      );
    });
  }
}
