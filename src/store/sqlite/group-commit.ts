// Group commit: work queued in the same turn of the event loop runs in one IMMEDIATE
// transaction, so concurrent calls share one fsync. Each job runs in its own savepoint: a job
// that throws rolls back alone and rejects alone; a failed COMMIT rejects every job in it.
// A job's promise resolves only after COMMIT returned, i.e. after its writes are durable.
// `before` runs ahead of each batch: when it throws (the database was deleted or replaced under
// the gate), every job of the batch rejects and nothing runs.
// `runLater` queues work that need not be durable before its caller goes on (a call's result
// entry and settlement, ADR 017): it rides in the next batch `run` starts, ahead of that
// batch's jobs, or commits on its own after `laterMs` when no batch comes.
import type { Db } from './db.js';

interface Job {
  run: () => unknown;
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
}

export class GroupCommit {
  private queue: Job[] = [];
  private scheduled = false;
  private later: Job[] = [];
  private laterTimer: ReturnType<typeof setTimeout> | null = null;

  constructor(
    private readonly db: Db,
    private readonly maxBatch = 256,
    private readonly before: () => void = () => undefined,
    private readonly laterMs = 2,
  ) {}

  /** Like run, but the job waits for the next batch (at most laterMs). Resolves after COMMIT. */
  runLater<T>(job: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.later.push({ run: job, resolve: resolve as (v: unknown) => void, reject });
      if (this.laterTimer === null && !this.scheduled) this.laterTimer = setTimeout(() => this.flush(), this.laterMs);
    });
  }

  run<T>(job: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ run: job, resolve: resolve as (v: unknown) => void, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  private flush() {
    this.scheduled = false;
    if (this.laterTimer !== null) {
      clearTimeout(this.laterTimer);
      this.laterTimer = null;
    }
    // Deferred work first: a call decided in this batch sees the settlements that came before it.
    if (this.later.length > 0) this.queue = this.later.concat(this.queue);
    this.later = [];
    while (this.queue.length > 0) {
      const batch = this.queue.splice(0, this.maxBatch);
      const outcomes: ({ ok: true; value: unknown } | { ok: false; error: unknown })[] = [];
      try {
        this.before();
        this.db
          .transaction(() => {
            for (const job of batch) {
              try {
                outcomes.push({ ok: true, value: this.db.transaction(job.run)() });
              } catch (error) {
                outcomes.push({ ok: false, error });
              }
            }
          })
          .immediate();
      } catch (error) {
        for (const job of batch) job.reject(error);
        continue;
      }
      batch.forEach((job, i) => {
        const o = outcomes[i];
        if (o.ok) job.resolve(o.value);
        else job.reject(o.error);
      });
    }
  }
}
