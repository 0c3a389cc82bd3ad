// The unit of work that lets synchronous ports run over an asynchronous driver (ADR 016).
// Inside `transact`, a port read is answered from facts this job fetched in its PostgreSQL
// transaction (rows locked FOR UPDATE where a decision depends on them); a read whose fact is not
// fetched yet SUSPENDS the job: the job's function is abandoned, the executor fetches the fact
// and runs the function again from the start. Writes are buffered (and seen by later reads of the
// same run), then written in the same transaction once the function returned. So a job function
// must be a function of what it reads through the ports, which is also what retrying a
// transaction after a conflict requires.
import type pg from 'pg';
import { StoreError } from '../ports.js';

/** Thrown through the job's function when it read a fact not fetched yet; never escapes transact. */
export class Suspend extends Error {
  constructor() {
    super('store read suspended (the job runs again once its facts are fetched)');
  }
}

/** A write found the database not as the job read it (another gate won a race): the job is retried. */
export class Conflict extends Error {}

export type Fetch = (c: pg.ClientBase) => Promise<unknown>;
export type Write = (c: pg.ClientBase) => Promise<void>;

/**
 * After a job succeeded: the facts it read under locks its transaction holds until COMMIT, as its
 * own writes left them, for the later jobs of that transaction (`carried`, updated in place).
 */
export type Carry = (done: Unit, carried: Map<string, unknown>) => void;

export class Unit {
  /** Facts fetched in this job's transaction: they survive the job's runs, not a retry. */
  readonly facts: Map<string, unknown>;

  /** `carried`: what earlier jobs of the same transaction left (see Carry). */
  constructor(carried?: ReadonlyMap<string, unknown>) {
    this.facts = new Map(carried);
  }
  /** This run's buffered writes and what they changed, by port. */
  writes: Write[] = [];
  overlay = new Map<string, unknown>();
  missing: { key: string; fetch: Fetch }[] = [];

  newRun(): void {
    this.writes = [];
    this.overlay = new Map();
    this.missing = [];
  }

  fact<T>(key: string, fetch: Fetch): T {
    // After a suspension nothing more runs on this path: a function that caught the Suspend
    // (a catch-all that would refuse the call) gets nothing further from the store.
    if (this.missing.length > 0) throw new Suspend();
    if (this.facts.has(key)) return this.facts.get(key) as T;
    this.missing.push({ key, fetch });
    throw new Suspend();
  }

  /** Per-run state of one port (e.g. changed rows), created on first use. */
  local<T>(key: string, make: () => T): T {
    let v = this.overlay.get(key) as T | undefined;
    if (v === undefined) {
      v = make();
      this.overlay.set(key, v);
    }
    return v;
  }

  write(w: Write): void {
    if (this.missing.length > 0) throw new Suspend();
    this.writes.push(w);
  }
}

/** Where a port finds the unit of the job running now (one job runs at a time per store). */
export class UnitSlot {
  current: Unit | null = null;

  get(): Unit {
    if (this.current === null)
      throw new StoreError('the PostgreSQL store is read and written only inside transact (one transaction per decision)');
    return this.current;
  }
}

/** A write that must change exactly `n` rows, else another gate changed them first. */
export async function expectRows(c: pg.ClientBase, n: number, sql: string, params: unknown[]): Promise<void> {
  const r = await c.query(sql, params);
  if (r.rowCount !== n) throw new Conflict(`expected ${n} row(s) changed, found ${r.rowCount}`);
}
