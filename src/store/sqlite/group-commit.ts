// Group commit: work queued in the same turn of the event loop runs in one IMMEDIATE
// transaction, so concurrent calls share one fsync. Each job runs in its own savepoint: a job
// that throws rolls back alone and rejects alone; a failed COMMIT rejects every job in it.
// A job's promise resolves only after COMMIT returned, i.e. after its writes are durable.
// `before` runs ahead of each batch: when it throws (the database was deleted or replaced under
// the gate), every job of the batch rejects and nothing runs.
import type { Db } from './db.js';

interface Job {
  run: () => unknown;
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
}

export class GroupCommit {
  private queue: Job[] = [];
  private scheduled = false;

  constructor(
    private readonly db: Db,
    private readonly maxBatch = 256,
    private readonly before: () => void = () => undefined,
  ) {}

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
