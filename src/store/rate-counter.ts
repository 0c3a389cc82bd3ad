// Allowed calls per task and tool over sliding minute, hour and day windows, for Cedar's
// `context.calls` and `context.calls_all` (product.md section 4). Guards against a rate limit
// that resets when the gate restarts: the counts are rows in the gate's SQLite database, so a
// restarted gate keeps counting. One row per allowed call keeps the windows exact (a limit of
// 5 per hour means the 6th call within any 60 minutes, not within a clock hour). Synchronous,
// so the gate records inside the same transaction as the ledger entry of the allow.
import type Database from 'better-sqlite3';

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

export const MINUTE_MS = 60_000;
export const HOUR_MS = 3_600_000;
export const DAY_MS = 86_400_000;

/** Calls made without a task id are counted together under this key. */
export const NO_TASK = '';

type Row = { minute: number | null; hour: number | null; day: number | null };

export class RateCounter {
  private readonly countTool: Database.Statement<[number, number, string, string, number], Row>;
  private readonly countAll: Database.Statement<[number, number, string, number], Row>;
  private readonly insert: Database.Statement<[string, string, number]>;
  private readonly prune: Database.Statement<[number]>;
  private lastPrune = -Infinity;

  constructor(private readonly db: Database.Database) {
    db.exec(`
      CREATE TABLE IF NOT EXISTS rate_calls (
        task_id TEXT NOT NULL,
        tool    TEXT NOT NULL,
        at_ms   INTEGER NOT NULL
      );
      CREATE INDEX IF NOT EXISTS rate_calls_task_tool_at ON rate_calls (task_id, tool, at_ms);
      CREATE INDEX IF NOT EXISTS rate_calls_task_at ON rate_calls (task_id, at_ms);
      CREATE INDEX IF NOT EXISTS rate_calls_at ON rate_calls (at_ms);
    `);
    // Rows stamped after `now` (a clock stepped back) count in every window: the safe direction.
    const sums = `SUM(at_ms > ?) AS minute, SUM(at_ms > ?) AS hour, COUNT(*) AS day`;
    this.countTool = db.prepare(`SELECT ${sums} FROM rate_calls WHERE task_id = ? AND tool = ? AND at_ms > ?`) as never;
    this.countAll = db.prepare(`SELECT ${sums} FROM rate_calls WHERE task_id = ? AND at_ms > ?`) as never;
    this.insert = db.prepare(`INSERT INTO rate_calls (task_id, tool, at_ms) VALUES (?, ?, ?)`);
    this.prune = db.prepare(`DELETE FROM rate_calls WHERE at_ms <= ?`);
  }

  /** Allowed calls in the windows ending at `now` (ms since the epoch). */
  counts(taskId: string | null, tool: string, now: number = Date.now()): RateCounts {
    const t = taskId ?? NO_TASK;
    const m = now - MINUTE_MS;
    const h = now - HOUR_MS;
    const d = now - DAY_MS;
    const a = this.countTool.get(m, h, t, tool, d)!;
    const b = this.countAll.get(m, h, t, d)!;
    return { calls: windows(a), callsAll: windows(b) };
  }

  /** Count one allowed call. Drops rows older than a day, at most once a minute. */
  record(taskId: string | null, tool: string, now: number = Date.now()): void {
    if (!Number.isSafeInteger(now)) throw new RangeError('rate counter: time must be integer milliseconds');
    this.insert.run(taskId ?? NO_TASK, tool, now);
    if (now - this.lastPrune >= MINUTE_MS || now < this.lastPrune) {
      this.prune.run(now - DAY_MS);
      this.lastPrune = now;
    }
  }
}

function windows(r: Row): WindowCounts {
  return { minute: r.minute ?? 0, hour: r.hour ?? 0, day: r.day ?? 0 };
}
