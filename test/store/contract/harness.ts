// What a store implementation hands the contract tests: a fresh, empty store, and a second
// connection to the same one (a second gate on the same home, or on the same database).
import type { Store } from '../../../src/store/ports.js';

// Ports are read and written inside `transact` (one transaction per decision); a store whose
// driver is asynchronous (PostgreSQL) answers only there, so every test goes through it.

export interface OpenedForTest {
  store: Store;
  /** Another connection to the same store, as a second gate would open it. */
  peer(): Promise<Store>;
  /**
   * Sets the clock of a store that keeps its own (PostgreSQL: the database's, which rate windows
   * count by) for the transactions after. Absent where the caller's `now` is the clock (SQLite);
   * a test passes the same time as `now` either way.
   */
  clock?(ms: number): Promise<void>;
}

export type StoreFactory = () => Promise<OpenedForTest>;

export const T = Date.parse('2026-11-30T08:00:00.000Z');
export const FP = 'sha256:' + 'a'.repeat(64);
export const FP2 = 'sha256:' + 'b'.repeat(64);

/** One transaction on `store`: what the job returns, once committed. */
export const tx = <T>(store: Store, fn: () => T): Promise<T> => store.transact(fn);
