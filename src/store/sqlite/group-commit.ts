// Group commit: work queued in the same turn of the event loop runs in one IMMEDIATE
// transaction, so concurrent calls share one fsync. Each job runs in its own savepoint: a job
// that throws rolls back alone and rejects alone; a failed COMMIT rejects every job in it.
// A job's promise resolves only after COMMIT returned, i.e. after its writes are durable.
// `before` runs ahead of each batch: when it throws (the database was deleted or replaced under
// the gate), every job of the batch rejects and nothing runs.
// `runLater` queues work that need not be durable before its caller goes on (a call's result
// entry and settlement, ADR 017): it rides in the next batch `run` starts, ahead of that
// batch's jobs, or commits on its own after `laterMs` when no batch comes.
// Participants (ADR 042) write what they held in memory after the jobs and before COMMIT; while
// one prepares asynchronously the transaction stays open and new jobs wait for the next batch.
import type { Db } from './db.js';
import type { TxParticipant } from '../ports.js';

interface Job {
  run: () => unknown;
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
}

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

export class GroupCommit {
  private queue: Job[] = [];
  private scheduled = false;
  private busy = false;
  private later: Job[] = [];
  private laterTimer: ReturnType<typeof setTimeout> | null = null;
  private readonly participants: TxParticipant[] = [];
  private readonly sql;

  constructor(
    private readonly db: Db,
    private readonly maxBatch = 256,
    private readonly before: () => void = () => undefined,
    private readonly laterMs = 2,
  ) {
    this.sql = {
      begin: db.prepare('BEGIN IMMEDIATE'),
      commit: db.prepare('COMMIT'),
      rollback: db.prepare('ROLLBACK'),
      savepoint: db.prepare('SAVEPOINT cloakpipe_job'),
      release: db.prepare('RELEASE cloakpipe_job'),
      undo: db.prepare('ROLLBACK TO cloakpipe_job'),
    };
  }

  enlist(p: TxParticipant): void {
    this.participants.push(p);
  }

  /** Like run, but the job waits for the next batch (at most laterMs). Resolves after COMMIT. */
  runLater<T>(job: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.later.push({ run: job, resolve: resolve as (v: unknown) => void, reject });
      if (this.laterTimer === null && !this.scheduled && !this.busy) this.laterTimer = setTimeout(() => this.flush(), this.laterMs);
    });
  }

  run<T>(job: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ run: job, resolve: resolve as (v: unknown) => void, reject });
      if (!this.scheduled && !this.busy) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  private flush(): void {
    this.scheduled = false;
    if (this.laterTimer !== null) {
      clearTimeout(this.laterTimer);
      this.laterTimer = null;
    }
    if (this.busy) return;
    // Deferred work first: a call decided in this batch sees the settlements that came before it.
    if (this.later.length > 0) this.queue = this.later.concat(this.queue);
    this.later = [];
    if (this.queue.length === 0) return;
    const batch = this.queue.splice(0, this.maxBatch);
    let pending: Promise<void> | null = null;
    try {
      pending = this.runBatch(batch);
    } finally {
      if (pending === null) this.flush(); // done synchronously (or failed): the rest now
    }
    if (pending !== null) {
      this.busy = true;
      void pending.finally(() => {
        this.busy = false;
        this.flush();
      });
    }
  }

  /** Runs one batch; returns a promise only when a participant prepares asynchronously. */
  private runBatch(batch: Job[]): Promise<void> | null {
    const outcomes: Outcome[] = [];
    let open = false;
    try {
      this.before();
      this.sql.begin.run();
      open = true;
      for (const p of this.participants) p.begin();
      for (const job of batch) outcomes.push(this.runJob(job));
      const prepared = this.participants.map((p) => p.prepare()).filter((r): r is Promise<void> => r instanceof Promise);
      if (prepared.length === 0) {
        this.end(batch, outcomes, null);
        return null;
      }
      return Promise.all(prepared).then(
        () => this.end(batch, outcomes, null),
        (error: unknown) => this.end(batch, outcomes, { error }),
      );
    } catch (error) {
      if (!open) {
        for (const job of batch) job.reject(error);
        return null;
      }
      this.end(batch, outcomes, { error });
      return null;
    }
  }

  private runJob(job: Job): Outcome {
    const marks = this.participants.map((p) => p.mark());
    try {
      return { ok: true, value: this.inSavepoint(job.run) };
    } catch (error) {
      this.participants.forEach((p, i) => p.rollback(marks[i]));
      return { ok: false, error };
    }
  }

  /** `run` in a savepoint of the batch, as better-sqlite3's nested transaction does it, with
   *  statements prepared once (db.transaction(fn) builds its wrappers anew for each fn). */
  private inSavepoint(run: () => unknown): unknown {
    const { savepoint, release, undo } = this.sql;
    savepoint.run();
    try {
      const value = run();
      if (value !== null && typeof (value as { then?: unknown } | undefined)?.then === 'function') throw new TypeError('a group commit job cannot return a promise');
      release.run();
      return value;
    } catch (error) {
      if (this.db.inTransaction) {
        undo.run();
        release.run();
      }
      throw error;
    }
  }

  /** COMMIT (or ROLLBACK after `failed`), tell the participants, settle the jobs. */
  private end(batch: Job[], outcomes: Outcome[], failed: { error: unknown } | null): void {
    let committed = false;
    try {
      if (failed === null) {
        this.sql.commit.run();
        committed = true;
      }
    } catch (error) {
      failed = { error };
    } finally {
      if (!committed && this.db.inTransaction) {
        try {
          this.sql.rollback.run();
        } catch {
          /* the connection is gone: nothing was committed */
        }
      }
      for (const p of this.participants) p.finish(committed);
    }
    if (failed !== null) {
      for (const job of batch) job.reject(failed.error);
      return;
    }
    batch.forEach((job, i) => {
      const o = outcomes[i];
      if (o.ok) job.resolve(o.value);
      else job.reject(o.error);
    });
  }
}
