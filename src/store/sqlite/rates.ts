// Allowed calls per task and tool over sliding minute, hour and day windows, for Cedar's
// `context.calls` and `context.calls_all` (product.md section 4). Guards against a rate limit
// that resets when the gate restarts: the counts are rows in the gate's SQLite database, so a
// restarted gate keeps counting. One row per allowed call keeps the windows exact (a limit of
// 5 per hour means the 6th call within any 60 minutes, not within a clock hour). Synchronous,
// so the gate records inside the same transaction as the ledger entry of the allow.
//
// Counting without scanning the day (docs/performance.md, P2): each row carries running counts,
// `n_tool` for its (task, tool) and `n_all` for its task, numbered in (at_ms, n) order, so that
// within a group the n of the last row at or before t is the number of rows at or before t
// (plus those already pruned). A window (since, ∞) is then `last.n − n(last row ≤ since)`, or
// `last.n − (first.n − 1)` when every surviving row is after `since`: a few index seeks,
// exact at the edges and whatever the day holds. A row recorded out of time order (a clock
// stepped back, or two gates whose transactions commit in the other order than they read the
// clock) renumbers the rows after it, so the invariant holds; that touches only those rows.
// Pruning deletes a prefix of each group in that order, so the survivors stay consecutive.
import type Database from 'better-sqlite3';
import type { Db } from './db.js';
import { ensureLedgerSchema } from './schema.js';
import { DAY_MS, HOUR_MS, MINUTE_MS, PRUNE_STEP, type CountsRead, type RateCounts, type RatesPort, type TxParticipant, type WindowCounts } from '../ports.js';

/** Calls made without a task id are counted together under this key. */
export const NO_TASK = '';

const BOTH: CountsRead = { calls: true, callsAll: true };
const UNREAD: WindowCounts = Object.freeze({ minute: 0, hour: 0, day: 0 });

type Totals = { last: number | null; base: number | null; minute: number | null; hour: number | null; day: number | null };
type Prev = { prevTool: number | null; baseTool: number | null; lastAtTool: number | null; prevAll: number | null; baseAll: number | null; lastAtAll: number | null };
/** The last row of a group (in (at_ms, n) order) as this connection wrote it. */
type Tail = { at: number; n: number };

/** The running-count columns and their indexes, added to a database made before they existed. */
export function migrateRates(db: Db, s = 'main'): void {
  const cols = () => (db.prepare(`PRAGMA ${s}.table_info(rate_calls)`).all() as { name: string }[]).map((c) => c.name);
  if (cols().includes('n_all')) return;
  db.transaction(() => {
    if (cols().includes('n_all')) return; // another gate on this home migrated first
    db.exec(`
      ALTER TABLE ${s}.rate_calls ADD COLUMN n_tool INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE ${s}.rate_calls ADD COLUMN n_all INTEGER NOT NULL DEFAULT 0;
      UPDATE ${s}.rate_calls SET n_tool = w.n_tool, n_all = w.n_all FROM (
        SELECT rowid AS id,
               ROW_NUMBER() OVER (PARTITION BY task_id, tool ORDER BY at_ms, rowid) AS n_tool,
               ROW_NUMBER() OVER (PARTITION BY task_id ORDER BY at_ms, rowid) AS n_all
        FROM ${s}.rate_calls) AS w
      WHERE rate_calls.rowid = w.id;
      DROP INDEX IF EXISTS ${s}.rate_calls_task_tool_at;
      DROP INDEX IF EXISTS ${s}.rate_calls_task_at;
    `);
  }).immediate();
}

export class SqliteRates implements RatesPort {
  private readonly totalsTool: Database.Statement<[Record<string, string | number>], Totals>;
  private readonly totalsAll: Database.Statement<[Record<string, string | number>], Totals>;
  private readonly previous: Database.Statement<[Record<string, string | number>], Prev>;
  private readonly shiftTool: Database.Statement<[string, string, number]>;
  private readonly shiftAll: Database.Statement<[string, number]>;
  private readonly insert: Database.Statement<[string, string, number, number, number]>;
  private readonly prune: Database.Statement<[number]>;
  private readonly recordTx: (t: string, tool: string, now: number) => void;
  private lastPrune = -Infinity;
  /** The last prune dropped a full step: rows may be left, so the next call prunes again. */
  private pruneDue = false;
  /**
   * Inside a group commit (participant below): the last row of each (task, tool) and task group
   * this group inserted. The group holds the write lock, so no other gate writes meanwhile, and
   * a row recorded at or after a group's last row is numbered from that row without reading it
   * back. Forgotten when any job rolls back or the group ends.
   */
  private tails: { tool: Map<string, Tail>; all: Map<string, Tail> } | null = null;

  constructor(
    db: Db,
    private readonly pruneStep = PRUNE_STEP,
  ) {
    ensureLedgerSchema(db); // rate_calls lives beside the entries; older homes gain it here
    // n of the last row of the group at or before @x: one backwards seek on the index.
    const tool = (n: string, x?: string) =>
      `(SELECT ${n} FROM rate_calls WHERE task_id = @t AND tool = @tool${x ? ` AND at_ms <= ${x}` : ''} ORDER BY at_ms DESC, n_tool DESC LIMIT 1)`;
    const all = (n: string, x?: string) => `(SELECT ${n} FROM rate_calls WHERE task_id = @t${x ? ` AND at_ms <= ${x}` : ''} ORDER BY at_ms DESC, n_all DESC LIMIT 1)`;
    const firstTool = `(SELECT n_tool - 1 FROM rate_calls WHERE task_id = @t AND tool = @tool ORDER BY at_ms, n_tool LIMIT 1)`;
    const firstAll = `(SELECT n_all - 1 FROM rate_calls WHERE task_id = @t ORDER BY at_ms, n_all LIMIT 1)`;
    this.totalsTool = db.prepare(
      `SELECT ${tool('n_tool')} AS last, ${firstTool} AS base, ${tool('n_tool', '@m')} AS minute, ${tool('n_tool', '@h')} AS hour, ${tool('n_tool', '@d')} AS day`,
    ) as never;
    this.totalsAll = db.prepare(`SELECT ${all('n_all')} AS last, ${firstAll} AS base, ${all('n_all', '@m')} AS minute, ${all('n_all', '@h')} AS hour, ${all('n_all', '@d')} AS day`) as never;
    this.previous = db.prepare(
      `SELECT ${tool('n_tool', '@now')} AS prevTool, ${firstTool} AS baseTool, ${tool('at_ms')} AS lastAtTool, ` +
        `${all('n_all', '@now')} AS prevAll, ${firstAll} AS baseAll, ${all('at_ms')} AS lastAtAll`,
    ) as never;
    this.shiftTool = db.prepare(`UPDATE rate_calls SET n_tool = n_tool + 1 WHERE task_id = ? AND tool = ? AND at_ms > ?`);
    this.shiftAll = db.prepare(`UPDATE rate_calls SET n_all = n_all + 1 WHERE task_id = ? AND at_ms > ?`);
    this.insert = db.prepare(`INSERT INTO rate_calls (task_id, tool, at_ms, n_tool, n_all) VALUES (?, ?, ?, ?, ?)`);
    // The oldest rows first, in (at_ms, rowid) order, which is each group's (at_ms, n) order: a
    // step drops a prefix of every group, so the survivors stay consecutive.
    this.prune = db.prepare(`DELETE FROM rate_calls WHERE rowid IN (SELECT rowid FROM rate_calls WHERE at_ms <= ? ORDER BY at_ms, rowid LIMIT ${pruneStep})`);
    // Read the previous counts and insert atomically. Alone, in a transaction of its own that
    // takes the write lock before reading, so two gates on one home cannot both number a row from
    // the same previous count. Inside a transaction (the gate's IMMEDIATE group) the lock is held
    // and the job's savepoint rolls it back with the job: a savepoint of its own would only cost
    // two more statements per allowed call.
    const record = (t: string, tl: string, now: number) => {
      const tails = this.tails;
      const toolKey = t + '\u0000' + tl;
      const tailTool = tails?.tool.get(toolKey);
      const tailAll = tails?.all.get(t);
      if (tails && tailTool && tailAll && tailTool.at <= now && tailAll.at <= now) {
        // In time order after rows this group wrote: the new row follows them.
        const nTool = tailTool.n + 1;
        const nAll = tailAll.n + 1;
        this.insert.run(t, tl, now, nTool, nAll);
        tails.tool.set(toolKey, { at: now, n: nTool });
        tails.all.set(t, { at: now, n: nAll });
        return;
      }
      const p = this.previous.get({ t, tool: tl, now })!;
      const shiftedTool = p.lastAtTool !== null && p.lastAtTool > now;
      const shiftedAll = p.lastAtAll !== null && p.lastAtAll > now;
      if (shiftedTool) this.shiftTool.run(t, tl, now);
      if (shiftedAll) this.shiftAll.run(t, now);
      const nTool = (p.prevTool ?? p.baseTool ?? 0) + 1;
      const nAll = (p.prevAll ?? p.baseAll ?? 0) + 1;
      this.insert.run(t, tl, now, nTool, nAll);
      if (!tails) return;
      // The new row is its group's last only when no row came after it.
      if (shiftedTool) tails.tool.delete(toolKey);
      else tails.tool.set(toolKey, { at: now, n: nTool });
      if (shiftedAll) tails.all.delete(t);
      else tails.all.set(t, { at: now, n: nAll });
    };
    const alone = db.transaction(record);
    this.recordTx = (t, tl, now) => {
      if (!db.inTransaction) {
        this.tails = null; // not the group's transaction any more (SQLite rolled it back)
        return alone.immediate(t, tl, now);
      }
      record(t, tl, now);
    };
  }

  /** For the store's group commit: the group's tails live from its BEGIN to its end. */
  participant(): TxParticipant {
    return {
      begin: () => void (this.tails = { tool: new Map(), all: new Map() }),
      mark: () => 0,
      // The job's rows went with its savepoint: read the tails back from the database.
      rollback: () => void (this.tails = this.tails && { tool: new Map(), all: new Map() }),
      prepare: () => undefined,
      finish: () => void (this.tails = null),
    };
  }

  /** Allowed calls in the windows ending at `now` (ms since the epoch); a count not `read` is
   *  not looked up (zeros): each is five index seeks on every call. */
  counts(taskId: string | null, tool: string, now: number, read: CountsRead = BOTH): RateCounts {
    const q = { t: taskId ?? NO_TASK, tool, m: now - MINUTE_MS, h: now - HOUR_MS, d: now - DAY_MS };
    return {
      calls: read.calls ? windows(this.totalsTool.get(q)!) : UNREAD,
      callsAll: read.callsAll ? windows(this.totalsAll.get({ t: q.t, m: q.m, h: q.h, d: q.d })!) : UNREAD,
    };
  }

  /** Count one allowed call. Drops rows older than a day, once a minute, a step at a time. */
  record(taskId: string | null, tool: string, now: number): void {
    if (!Number.isSafeInteger(now)) throw new RangeError('rate counter: time must be integer milliseconds');
    this.recordTx(taskId ?? NO_TASK, tool, now);
    if (this.pruneDue || now - this.lastPrune >= MINUTE_MS || now < this.lastPrune) {
      this.pruneDue = this.prune.run(now - DAY_MS).changes >= this.pruneStep;
      this.lastPrune = now;
      // A pruned tail leaves its group empty: numbering on from it still gives exact windows.
    }
  }
}

// Rows stamped after `now` (a clock stepped back) count in every window: the safe direction.
function windows(r: Totals): WindowCounts {
  if (r.last === null) return { minute: 0, hour: 0, day: 0 };
  const before = (x: number | null) => r.last! - (x ?? r.base!);
  return { minute: before(r.minute), hour: before(r.hour), day: before(r.day) };
}
