// What the gate learned after a call was decided (the call's outcome: its result entry and its
// operation's settlement) and could not record because the store failed just then. Dropped, a
// write call's operation stayed `pending` under a live gate: every retry refused
// reconcile_before_retry and `ops reconcile` refused it as "in flight on a running gate", until a
// restart. Kept and tried again until the store takes it; a gate that stops first leaves it
// pending, which start-up makes unknown, as after a crash.
import type { Transact } from '../store/ports.js';

const FIRST_MS = 500;
const LAST_MS = 30_000;
/** At most this many kept, holding at most this many bytes of results: past either the oldest is given up (left pending, as before). */
const MAX_KEPT = 1000;
const MAX_KEPT_BYTES = 64 * 1024 * 1024;

interface Kept {
  job: () => void;
  bytes: number;
}

export class Unrecorded {
  private kept: Kept[] = [];
  private timer: NodeJS.Timeout | null = null;
  private delayMs = FIRST_MS;

  constructor(private readonly commit: Transact) {}

  /** Commits `job` now, else keeps it. */
  record(job: () => void): void {
    void this.commit(job).catch(() => this.keep(job));
  }

  /** `job` (a transaction's function, safe to run again, holding about `bytes`) failed to commit: it is tried again later. */
  keep(job: () => void, bytes = 0): void {
    this.kept.push({ job, bytes });
    this.bound();
    this.schedule();
  }

  /** The newest is always kept. */
  private bound(): void {
    let bytes = this.kept.reduce((n, k) => n + k.bytes, 0);
    while (this.kept.length > 1 && (this.kept.length > MAX_KEPT || bytes > MAX_KEPT_BYTES)) bytes -= this.kept.shift()!.bytes;
  }

  private schedule(): void {
    if (this.timer !== null || this.kept.length === 0) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.retry();
    }, this.delayMs);
    this.timer.unref(); // never what keeps the gate running
  }

  /** Tries every kept job once (they share the store's group commit); what fails again stays. */
  async retry(): Promise<void> {
    const jobs = this.kept.splice(0);
    const failed: Kept[] = [];
    await Promise.all(jobs.map((k) => this.commit(k.job).catch(() => void failed.push(k))));
    this.kept.unshift(...failed);
    this.bound();
    this.delayMs = failed.length > 0 ? Math.min(LAST_MS, this.delayMs * 2) : FIRST_MS;
    this.schedule();
  }

  /** The gate is closing: one last try, and no timer left. */
  async close(): Promise<void> {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    if (this.kept.length > 0) await this.retry();
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
  }
}
