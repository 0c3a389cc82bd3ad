// The ports over a PostgreSQL unit of work (unit.ts): reads are facts fetched in the job's
// transaction (rows a decision depends on locked FOR UPDATE), writes are buffered and written
// in the same transaction, each change a compare-and-set that must hit its row, else the job is
// retried on what the database holds now. Shared: operations, receipts, pins, rate windows.
// Per gate: entries and anchors (`gate_id`); a gate never reads or writes another gate's chain.
import type pg from 'pg';
import { canonicalize } from '../../core/canonical.js';
import type { JsonValue } from '../../core/json.js';
import {
  DAY_MS,
  HOUR_MS,
  MINUTE_MS,
  PRUNE_STEP,
  StoreError,
  type AnchorRow,
  type AnchorsPort,
  type LedgerPort,
  type LedgerRow,
  type Operation,
  type OperationState,
  type OperationsPort,
  type PinRow,
  type PinsPort,
  type RateCounts,
  type RatesPort,
  type ReceiptsPort,
  type UsedReceipt,
  type WindowCounts,
} from '../ports.js';
import { expectRows, type Unit, type UnitSlot } from './unit.js';

const key = (...parts: unknown[]) => JSON.stringify(parts);

// PostgreSQL text cannot hold U+0000, and ids, task ids and tool names are any text (they may
// come from arguments): stored escaped, one-to-one (`\` → `\\`, U+0000 → `\0`), read back exact.
export const enc = (v: string): string => (/[\\\0]/.test(v) ? v.replace(/\\/g, '\\\\').replace(/\0/g, '\\0') : v);
export const dec = (v: string): string => (v.includes('\\') ? v.replace(/\\(\\|0)/g, (_, c: string) => (c === '0' ? '\0' : '\\')) : v);
export const encN = (v: string | null): string | null => (v === null ? null : enc(v));
export const decN = (v: string | null): string | null => (v === null ? null : dec(v));
const json = (v: JsonValue | null) => (v === null ? null : canonicalize(v));

// ── operations ─────────────────────────────────────────────────────────────────────────────────

interface OpRow extends Omit<Operation, 'result' | 'error'> {
  result: string | null;
  error: string | null;
}

function opFromRow(r: OpRow): Operation {
  return {
    id: dec(r.id),
    fingerprint: r.fingerprint,
    tool: dec(r.tool),
    state: r.state as OperationState,
    attempts: Number(r.attempts),
    result: r.result === null ? null : (JSON.parse(r.result) as JsonValue),
    error: r.error === null ? null : (JSON.parse(r.error) as JsonValue),
    note: r.note,
    owner: decN(r.owner),
    created_at: r.created_at,
    updated_at: r.updated_at,
  };
}

/**
 * A port over rows a run may change: what this run wrote is read back before the database, and
 * a row is fetched (and locked) at most once a run.
 */
abstract class RunRows<T> {
  /** The unit-of-work slot of this run's changed rows. */
  protected abstract readonly rowsKey: string;

  constructor(
    protected readonly slot: UnitSlot,
    protected readonly s: string,
  ) {}

  /** This run's changed rows by key. */
  protected changed(): Map<string, T> {
    return this.slot.get().local(this.rowsKey, () => new Map<string, T>());
  }

  /** The row this run changed under `k`, else what `load` fetches, once a run, as fact `fact`. */
  protected row(k: string, fact: string, load: (c: pg.ClientBase) => Promise<T | null>): T | null {
    return this.changed().get(k) ?? this.slot.get().fact<T | null>(fact, load);
  }
}

const byChange = (a: Operation, b: Operation) => (a.updated_at < b.updated_at ? -1 : a.updated_at > b.updated_at ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

export class PgOperations extends RunRows<Operation> implements OperationsPort {
  protected readonly rowsKey = 'ops';

  /** `lock`: a decision locks the row it reads; a reader (ops list, show) never waits for a gate's lock. */
  constructor(slot: UnitSlot, s: string, private readonly lock = true) {
    super(slot, s);
  }

  get(id: string): Operation | null {
    return this.row(id, key('op', id), async (c) => {
      const r = await c.query<OpRow>(`SELECT * FROM ${this.s}.operations WHERE id = $1${this.lock ? ' FOR UPDATE' : ''}`, [enc(id)]);
      return r.rows[0] ? opFromRow(r.rows[0]) : null;
    });
  }

  private merged(fetched: Operation[]): Operation[] {
    const changed = this.changed();
    const out = new Map(fetched.map((o) => [o.id, changed.get(o.id) ?? o]));
    for (const [id, o] of changed) out.set(id, o);
    return [...out.values()];
  }

  list(state: OperationState | undefined, limit: number): Operation[] {
    const rows = this.slot.get().fact<Operation[]>(key('ops', state ?? null, limit), async (c) => {
      const r = state
        ? await c.query<OpRow>(`SELECT * FROM ${this.s}.operations WHERE state = $1 ORDER BY updated_at, id LIMIT $2`, [state, limit])
        : await c.query<OpRow>(`SELECT * FROM ${this.s}.operations ORDER BY updated_at, id LIMIT $1`, [limit]);
      return r.rows.map(opFromRow);
    });
    return this.merged(rows)
      .filter((o) => !state || o.state === state)
      .sort(byChange)
      .slice(0, limit);
  }

  insert(op: { id: string; fingerprint: string; tool: string; owner: string; at: string }): void {
    if (this.get(op.id) !== null) throw new StoreError('operation id exists');
    const row: Operation = { ...op, state: 'pending', attempts: 1, result: null, error: null, note: 'begin', created_at: op.at, updated_at: op.at };
    this.slot.get().write(async (c) => {
      await c.query(
        `INSERT INTO ${this.s}.operations (id, fingerprint, tool, state, attempts, result, error, note, owner, created_at, updated_at)
         VALUES ($1, $2, $3, 'pending', 1, NULL, NULL, 'begin', $4, $5, $5)`,
        [enc(op.id), op.fingerprint, enc(op.tool), enc(op.owner), op.at],
      );
    });
    this.changed().set(op.id, row);
  }

  /** Compare-and-set: `from` holds on the row as read (locked), and the same SQL must hit it. */
  private cas(id: string, holds: (o: Operation) => boolean, next: (o: Operation) => Operation, where: string, whereParams: unknown[]): boolean {
    const cur = this.get(id);
    if (!cur || !holds(cur)) return false;
    const n = next(cur);
    this.slot.get().write((c) =>
      expectRows(
        c,
        1,
        `UPDATE ${this.s}.operations SET state = $2, attempts = $3, result = $4, error = $5, note = $6, owner = $7, updated_at = $8 WHERE id = $1 AND ${where}`,
        [enc(id), n.state, n.attempts, json(n.result), json(n.error), n.note, encN(n.owner), n.updated_at, ...whereParams],
      ),
    );
    this.changed().set(id, n);
    return true;
  }

  restart(id: string, fingerprint: string, from: { state: 'succeeded' | 'failed'; attempts: number }, note: string, owner: string, at: string): boolean {
    return this.cas(
      id,
      (o) => o.fingerprint === fingerprint && o.state === from.state && o.attempts === from.attempts,
      (o) => ({ ...o, state: 'pending', attempts: o.attempts + 1, result: null, error: null, note, owner, updated_at: at }),
      'fingerprint = $9 AND state = $10 AND attempts = $11',
      [fingerprint, from.state, from.attempts],
    );
  }

  settle(id: string, attempt: number, to: { state: 'succeeded' | 'failed'; result: JsonValue | null; error: JsonValue | null }, at: string): boolean {
    return this.cas(
      id,
      (o) => o.state === 'pending' && o.attempts === attempt,
      (o) => ({ ...o, state: to.state, result: to.result, error: to.error, note: 'upstream', updated_at: at }),
      "state = 'pending' AND attempts = $9",
      [attempt],
    );
  }

  markUnknown(id: string, attempt: number, note: string, at: string): boolean {
    return this.cas(
      id,
      (o) => o.state === 'pending' && o.attempts === attempt,
      (o) => ({ ...o, state: 'unknown', note, updated_at: at }),
      "state = 'pending' AND attempts = $9",
      [attempt],
    );
  }

  pendingOwners(): (string | null)[] {
    const rows = this.slot.get().fact<Operation[]>(key('pending'), async (c) => {
      const r = await c.query<OpRow>(`SELECT * FROM ${this.s}.operations WHERE state = 'pending'`);
      return r.rows.map(opFromRow);
    });
    return [...new Set(this.merged(rows).filter((o) => o.state === 'pending').map((o) => o.owner))];
  }

  recoverOwner(owner: string | null, at: string): number {
    const rows = this.slot.get().fact<Operation[]>(key('pending-of', owner), async (c) => {
      const r = await c.query<OpRow>(`SELECT * FROM ${this.s}.operations WHERE state = 'pending' AND owner IS NOT DISTINCT FROM $1 ORDER BY id FOR UPDATE`, [encN(owner)]);
      return r.rows.map(opFromRow);
    });
    let n = 0;
    for (const o of this.merged(rows)) {
      if (o.state !== 'pending' || o.owner !== owner) continue;
      if (this.markUnknown(o.id, o.attempts, 'startup', at)) n++;
    }
    return n;
  }

  reconcile(id: string, from: { state: OperationState; attempts: number }, to: { state: 'succeeded' | 'failed'; result: JsonValue | null; note: string }, at: string): boolean {
    return this.cas(
      id,
      (o) => o.state === from.state && o.attempts === from.attempts,
      (o) => ({ ...o, state: to.state, result: to.result, error: null, note: to.note, updated_at: at }),
      'state = $9 AND attempts = $10',
      [from.state, from.attempts],
    );
  }
}

// ── receipts ───────────────────────────────────────────────────────────────────────────────────

export class PgReceipts extends RunRows<UsedReceipt> implements ReceiptsPort {
  protected readonly rowsKey = 'receipts';

  used(receiptId: string): UsedReceipt | null {
    // Absence cannot be locked: two gates consuming at once both write, and the primary key
    // makes the second fail whole (it is retried and then reads the receipt as used).
    return this.row(receiptId, key('receipt', receiptId), async (c) => {
      const r = await c.query<UsedReceipt>(`SELECT receipt_id, nonce, approver, fingerprint, receipt, used_at FROM ${this.s}.used_receipts WHERE receipt_id = $1`, [enc(receiptId)]);
      const u = r.rows[0];
      return u ? { ...u, receipt_id: dec(u.receipt_id), nonce: dec(u.nonce), approver: dec(u.approver) } : null;
    });
  }

  consume(u: Omit<UsedReceipt, 'used_at'>, at: string): void {
    if (this.used(u.receipt_id) !== null) throw new StoreError('receipt already used');
    this.slot.get().write(async (c) => {
      await c.query(`INSERT INTO ${this.s}.used_receipts (receipt_id, nonce, approver, fingerprint, receipt, used_at) VALUES ($1, $2, $3, $4, $5, $6)`, [
        enc(u.receipt_id),
        enc(u.nonce),
        enc(u.approver),
        u.fingerprint,
        u.receipt,
        at,
      ]);
    });
    this.changed().set(u.receipt_id, { ...u, used_at: at });
  }
}

// ── pins ───────────────────────────────────────────────────────────────────────────────────────

interface PinDbRow extends Omit<PinRow, 'pinned_at'> {
  pinned_at: string | number;
}
const pinFromRow = (r: PinDbRow): PinRow => ({ release: dec(r.release), tool: dec(r.tool), digest: r.digest, observed: r.observed, pinned_at: Number(r.pinned_at) });

export class PgPins extends RunRows<PinRow> implements PinsPort {
  protected readonly rowsKey = 'pins';

  /**
   * After a job of the transaction succeeded: each pin row it read and found (locked until
   * COMMIT), as it left it. A pin found missing locked nothing: later jobs read it again.
   */
  carry(done: Unit, carried: Map<string, unknown>): void {
    const changed = done.overlay.get(this.rowsKey) as Map<string, PinRow> | undefined;
    for (const [k, fact] of done.facts) {
      const [kind, release, tool] = JSON.parse(k) as [unknown, string, string];
      if (kind !== 'pin') continue;
      const now = changed?.get(key(release, tool)) ?? (fact as PinRow | null);
      if (now !== null) carried.set(k, now);
    }
  }

  get(release: string, tool: string): PinRow | null {
    return this.row(key(release, tool), key('pin', release, tool), async (c) => {
      const r = await c.query<PinDbRow>(`SELECT * FROM ${this.s}.pins WHERE release = $1 AND tool = $2 FOR UPDATE`, [enc(release), enc(tool)]);
      return r.rows[0] ? pinFromRow(r.rows[0]) : null;
    });
  }

  list(): PinRow[] {
    const rows = this.slot.get().fact<PinRow[]>(key('pins'), async (c) => (await c.query<PinDbRow>(`SELECT * FROM ${this.s}.pins ORDER BY release, tool`)).rows.map(pinFromRow));
    const out = new Map(rows.map((p) => [key(p.release, p.tool), p]));
    for (const [k, p] of this.changed()) out.set(k, p);
    return [...out.values()].sort((a, b) => (a.release < b.release ? -1 : a.release > b.release ? 1 : a.tool < b.tool ? -1 : a.tool > b.tool ? 1 : 0));
  }

  insert(release: string, tool: string, digest: string, now: number): void {
    if (this.get(release, tool) !== null) throw new StoreError('tool already pinned');
    this.slot.get().write(async (c) => {
      await c.query(`INSERT INTO ${this.s}.pins (release, tool, digest, observed, pinned_at) VALUES ($1, $2, $3, NULL, $4)`, [enc(release), enc(tool), digest, now]);
    });
    this.changed().set(key(release, tool), { release, tool, digest, observed: null, pinned_at: now });
  }

  setObserved(release: string, tool: string, observed: string | null): void {
    const cur = this.get(release, tool);
    if (!cur) return;
    this.slot.get().write((c) => expectRows(c, 1, `UPDATE ${this.s}.pins SET observed = $3 WHERE release = $1 AND tool = $2`, [enc(release), enc(tool), observed]));
    this.changed().set(key(release, tool), { ...cur, observed });
  }

  promote(release: string, tool: string, now: number): boolean {
    const cur = this.get(release, tool);
    if (!cur || cur.observed === null) return false;
    this.slot
      .get()
      .write((c) =>
        expectRows(c, 1, `UPDATE ${this.s}.pins SET digest = observed, observed = NULL, pinned_at = $3 WHERE release = $1 AND tool = $2 AND observed IS NOT NULL`, [
          enc(release),
          enc(tool),
          now,
        ]),
      );
    this.changed().set(key(release, tool), { ...cur, digest: cur.observed, observed: null, pinned_at: now });
    return true;
  }
}

// ── rate windows ───────────────────────────────────────────────────────────────────────────────

/** Calls made without a task id are counted together under this key (as on SQLite). */
const NO_TASK = '';
/**
 * Rows are kept this long past the day window before a prune may take them: a transaction in
 * flight read the database's clock a moment earlier, and that clock may step back; a row taken
 * while some transaction still counts it would let that one allow too many.
 */
const PRUNE_MARGIN = HOUR_MS;

interface RateFact {
  /** The database's clock (ms) when the task's row was locked: the time this job counts at and stamps. */
  now: number;
  /** Calls one by one within the hour window (and any stamped after `now`). */
  calls: { tool: string; at: number }[];
  /** Calls in the day window before the hour window, per tool. */
  middle: Map<string, number>;
}

/**
 * Windows are counted and calls stamped by the database's clock (ADR 060), read under the task's
 * row lock: every gate counts on one clock, whatever its own says, and the stamps of one task
 * follow the order its decisions took the lock in. The `now` callers pass is not used here.
 */
export class PgRates implements RatesPort {
  private lastPrune = -Infinity;
  /** The last prune dropped a full step: rows may be left, so the next call prunes again. */
  private pruneDue = false;

  constructor(
    private readonly slot: UnitSlot,
    private readonly s: string,
  ) {}

  private recorded(): { task: string; tool: string; at: number }[] {
    return this.slot.get().local('rates', () => [] as { task: string; tool: string; at: number }[]);
  }

  /** The task's windows, fetched once a job (or carried in): its row locked, then the clock read. */
  private windows(task: string): RateFact {
    // Locking the task's row serializes every decision that counts this task's windows, on
    // every gate: what it counts cannot change until it commits its own call.
    return this.slot.get().fact<RateFact>(key('rates', task), async (c) => {
      const lock = `SELECT 1 FROM ${this.s}.rate_tasks WHERE task_key = $1 FOR UPDATE`;
      if ((await c.query(lock, [enc(task)])).rowCount === 0) {
        await c.query(`INSERT INTO ${this.s}.rate_tasks (task_key) VALUES ($1) ON CONFLICT DO NOTHING`, [enc(task)]);
        await c.query(lock, [enc(task)]);
      }
      // One statement: the clock and the rows it counts in one snapshot, taken after the lock.
      const r = await c.query<{ now_ms: string; tool: string | null; at_ms: string | null; n: string | null }>(
        `WITH t AS MATERIALIZED (SELECT ${this.s}.clock_ms() AS now_ms)
         SELECT t.now_ms, NULL::text AS tool, NULL::bigint AS at_ms, NULL::bigint AS n FROM t
         UNION ALL
         SELECT t.now_ms, r.tool, r.at_ms, NULL::bigint FROM t JOIN ${this.s}.rate_calls r ON r.task_key = $1 AND r.at_ms > t.now_ms - ${HOUR_MS}
         UNION ALL
         SELECT t.now_ms, r.tool, NULL::bigint, count(*) FROM t JOIN ${this.s}.rate_calls r
           ON r.task_key = $1 AND r.at_ms > t.now_ms - ${DAY_MS} AND r.at_ms <= t.now_ms - ${HOUR_MS} GROUP BY t.now_ms, r.tool`,
        [enc(task)],
      );
      const f: RateFact = { now: Number(r.rows[0].now_ms), calls: [], middle: new Map() };
      for (const row of r.rows) {
        if (row.tool === null) continue;
        if (row.n !== null) f.middle.set(dec(row.tool), Number(row.n));
        else f.calls.push({ tool: dec(row.tool), at: Number(row.at_ms) });
      }
      return f;
    });
  }

  counts(taskId: string | null, tool: string): RateCounts {
    const task = taskId ?? NO_TASK;
    const f = this.windows(task);
    const now = f.now;
    const calls = [...f.calls, ...this.recorded().filter((r) => r.task === task)];
    const count = (only: string | null): WindowCounts => {
      const mine = only === null ? calls : calls.filter((c) => c.tool === only);
      const inWindow = (w: number) => mine.filter((c) => c.at > now - w).length;
      let middle = 0;
      for (const [t, n] of f.middle) if (only === null || t === only) middle += n;
      return { minute: inWindow(MINUTE_MS), hour: inWindow(HOUR_MS), day: inWindow(HOUR_MS) + middle };
    };
    return { calls: count(tool), callsAll: count(null) };
  }

  /**
   * After a job of the transaction succeeded: every window fact it holds (fetched, or carried in
   * from the jobs before it), with the calls it recorded for that fact's task. The task's row the
   * fact's fetch locked stays locked until COMMIT, so no other gate counted into that task since.
   */
  carry(done: Unit, carried: Map<string, unknown>): void {
    const recorded = (done.overlay.get('rates') as { task: string; tool: string; at: number }[] | undefined) ?? [];
    for (const [k, fact] of done.facts) {
      const [kind, task] = JSON.parse(k) as [unknown, string];
      if (kind !== 'rates') continue;
      const f = fact as RateFact;
      const mine = recorded.filter((r) => r.task === task).map((r) => ({ tool: r.tool, at: r.at }));
      carried.set(k, mine.length === 0 ? f : { ...f, calls: [...f.calls, ...mine] });
    }
  }

  record(taskId: string | null, tool: string): void {
    const task = taskId ?? NO_TASK;
    const now = this.windows(task).now; // stamped by the clock it was counted by
    const unit = this.slot.get();
    unit.write(async (c) => {
      await c.query(`INSERT INTO ${this.s}.rate_calls (task_key, tool, at_ms) VALUES ($1, $2, $3)`, [enc(task), enc(tool), now]);
    });
    if (this.pruneDue || now - this.lastPrune > MINUTE_MS) {
      // Rows older than a day count in no window; dropped once a minute per gate, a step at a
      // time (PRUNE_STEP, as on SQLite): a backlog goes one step with each following call.
      const before = now - DAY_MS - PRUNE_MARGIN;
      unit.write(async (c) => {
        const r = await c.query(`DELETE FROM ${this.s}.rate_calls WHERE ctid IN (SELECT ctid FROM ${this.s}.rate_calls WHERE at_ms <= $1 LIMIT ${PRUNE_STEP})`, [before]);
        this.lastPrune = now;
        this.pruneDue = (r.rowCount ?? 0) >= PRUNE_STEP;
      });
    }
    this.recorded().push({ task, tool, at: now });
  }
}

// ── the ledger of one gate ────────────────────────────────────────────────────────────────────

interface EntryDbRow {
  seq: string | number;
  ts: string;
  kind: string;
  hash: string;
  body: string;
}
const entryFromRow = (r: EntryDbRow): LedgerRow => ({ seq: Number(r.seq), ts: r.ts, kind: r.kind, hash: r.hash, body: r.body });

export class PgLedger implements LedgerPort {
  constructor(
    private readonly slot: UnitSlot,
    private readonly s: string,
    private readonly gateId: string,
  ) {}

  private appended(): LedgerRow[] {
    return this.slot.get().local('entries', () => [] as LedgerRow[]);
  }

  head(): LedgerRow | null {
    const mine = this.appended();
    if (mine.length > 0) return mine[mine.length - 1];
    // The gate's row, locked: the chain of one gate has one writer at a time, however many
    // connections (or processes) the gate has.
    return this.slot.get().fact<LedgerRow | null>(key('head'), async (c) => {
      const g = await c.query(`SELECT 1 FROM ${this.s}.gates WHERE gate_id = $1 FOR UPDATE`, [this.gateId]);
      if (g.rowCount === 0) throw new StoreError(`gate ${JSON.stringify(this.gateId)} is not registered in the store (run cloakpipe init --store … --gate-id NAME)`);
      const r = await c.query<EntryDbRow>(`SELECT seq, ts, kind, hash, body FROM ${this.s}.entries WHERE gate_id = $1 ORDER BY seq DESC LIMIT 1`, [this.gateId]);
      return r.rows[0] ? entryFromRow(r.rows[0]) : null;
    });
  }

  /**
   * After a job of the transaction succeeded: the head its later jobs start from. The gate's row
   * that the head's first read locked stays locked until COMMIT, so no other writer moved the
   * chain; later jobs neither lock it again nor read the head again.
   */
  carry(done: Unit, carried: Map<string, unknown>): void {
    const mine = done.overlay.get('entries') as LedgerRow[] | undefined;
    if (mine && mine.length > 0) carried.set(key('head'), mine[mine.length - 1]);
    else if (done.facts.has(key('head'))) carried.set(key('head'), done.facts.get(key('head')));
  }

  insert(row: LedgerRow): void {
    const h = this.head();
    if (h !== null && row.seq <= h.seq) throw new StoreError(`ledger seq ${row.seq} is taken`);
    this.slot.get().write(async (c) => {
      await c.query(`INSERT INTO ${this.s}.entries (gate_id, seq, ts, kind, hash, body) VALUES ($1, $2, $3, $4, $5, $6)`, [
        this.gateId,
        row.seq,
        row.ts,
        row.kind,
        row.hash,
        row.body,
      ]);
    });
    this.appended().push({ ...row });
  }

  count(): number {
    const n = this.slot.get().fact<number>(key('count'), async (c) =>
      Number((await c.query<{ n: string }>(`SELECT count(*) AS n FROM ${this.s}.entries WHERE gate_id = $1`, [this.gateId])).rows[0].n),
    );
    return n + this.appended().length;
  }

  bodies(fromSeq: number, limit: number): Iterable<string> {
    const stored = this.slot.get().fact<string[]>(key('bodies', fromSeq, limit), async (c) =>
      (await c.query<{ body: string }>(`SELECT body FROM ${this.s}.entries WHERE gate_id = $1 AND seq >= $2 ORDER BY seq LIMIT $3`, [this.gateId, fromSeq, limit])).rows.map(
        (r) => r.body,
      ),
    );
    return [...stored, ...this.appended().filter((r) => r.seq >= fromSeq).map((r) => r.body)].slice(0, limit);
  }

  between(first: number, last: number): Iterable<{ seq: number; body: string }> {
    const stored = this.slot.get().fact<{ seq: number; body: string }[]>(key('between', first, last), async (c) =>
      (
        await c.query<{ seq: string; body: string }>(`SELECT seq, body FROM ${this.s}.entries WHERE gate_id = $1 AND seq >= $2 AND seq <= $3 ORDER BY seq`, [
          this.gateId,
          first,
          last,
        ])
      ).rows.map((r) => ({ seq: Number(r.seq), body: r.body })),
    );
    return [...stored, ...this.appended().filter((r) => r.seq >= first && r.seq <= last).map((r) => ({ seq: r.seq, body: r.body }))];
  }

  lastOfKind(kind: string): LedgerRow | null {
    const mine = this.appended().filter((r) => r.kind === kind);
    if (mine.length > 0) return mine[mine.length - 1];
    return this.slot.get().fact<LedgerRow | null>(key('last', kind), async (c) => {
      const r = await c.query<EntryDbRow>(`SELECT seq, ts, kind, hash, body FROM ${this.s}.entries WHERE gate_id = $1 AND kind = $2 ORDER BY seq DESC LIMIT 1`, [
        this.gateId,
        kind,
      ]);
      return r.rows[0] ? entryFromRow(r.rows[0]) : null;
    });
  }
}

export class PgAnchors implements AnchorsPort {
  constructor(
    private readonly slot: UnitSlot,
    private readonly s: string,
    private readonly gateId: string,
  ) {}

  private put_(): Map<string, AnchorRow> {
    return this.slot.get().local('anchors', () => new Map<string, AnchorRow>());
  }

  private stored(): AnchorRow[] {
    return this.slot.get().fact<AnchorRow[]>(key('anchors'), async (c) =>
      (
        await c.query<{ epoch: string; kind: string; data: string }>(`SELECT epoch_seq AS epoch, kind, data FROM ${this.s}.anchors WHERE gate_id = $1 ORDER BY epoch_seq, kind`, [
          this.gateId,
        ])
      ).rows.map((r) => ({ epoch: Number(r.epoch), kind: r.kind, data: r.data })),
    );
  }

  put(a: AnchorRow): void {
    this.slot.get().write(async (c) => {
      await c.query(
        `INSERT INTO ${this.s}.anchors (gate_id, epoch_seq, kind, data) VALUES ($1, $2, $3, $4)
         ON CONFLICT (gate_id, epoch_seq, kind) DO UPDATE SET data = EXCLUDED.data`,
        [this.gateId, a.epoch, a.kind, a.data],
      );
    });
    this.put_().set(key(a.epoch, a.kind), { ...a });
  }

  // One epoch's kinds by the primary key: an anchoring round must not read every token the chain
  // ever stored (two an epoch, kilobytes each).
  kinds(epoch: number): Set<string> {
    const stored = this.slot.get().fact<string[]>(key('kinds', epoch), async (c) =>
      (await c.query<{ kind: string }>(`SELECT kind FROM ${this.s}.anchors WHERE gate_id = $1 AND epoch_seq = $2`, [this.gateId, epoch])).rows.map((r) => r.kind),
    );
    const out = new Set(stored);
    for (const a of this.put_().values()) if (a.epoch === epoch) out.add(a.kind);
    return out;
  }

  all(): Iterable<AnchorRow> {
    const out = new Map(this.stored().map((a) => [key(a.epoch, a.kind), a]));
    for (const [k, a] of this.put_()) out.set(k, a);
    return [...out.values()].sort((a, b) => a.epoch - b.epoch || (a.kind < b.kind ? -1 : a.kind > b.kind ? 1 : 0));
  }
}

export type { pg };
