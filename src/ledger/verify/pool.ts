// Parallel, ordered, bounded: entry lines go out in batches to worker threads (one per core) and
// come back in input order; at most a few batches are in flight, so memory stays bounded however
// long the ledger. Short ledgers are checked inline (starting workers would cost more).
import type { KeyObject } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { checkEntryLine, type CheckedEntry } from './check-entry.js';

export interface PoolOptions {
  /** Worker threads; 0 checks inline. Default: every core. */
  workers?: number;
  batchSize?: number;
  /** Lines checked inline before workers start (small ledgers never start them). */
  inlineFirst?: number;
  /** Return each parsed entry with its check (for readers that consume verified entries). */
  withEntries?: boolean;
}

class WorkerPool {
  private readonly workers: Worker[] = [];
  private readonly waiting = new Map<number, { resolve: (r: CheckedEntry[]) => void; reject: (e: unknown) => void }>();
  private next = 0;
  private failed: unknown = null;

  constructor(n: number, publicKeyPem: string, withEntries: boolean) {
    for (let i = 0; i < n; i++) {
      const w = new Worker(new URL('./worker.js', import.meta.url), { workerData: { publicKeyPem, withEntries } });
      w.on('message', (m: { id: number; results: CheckedEntry[] }) => {
        const p = this.waiting.get(m.id);
        this.waiting.delete(m.id);
        p?.resolve(m.results);
      });
      w.on('error', (e) => this.abort(e));
      this.workers.push(w);
    }
  }

  private abort(e: unknown) {
    this.failed = e;
    for (const p of this.waiting.values()) p.reject(e);
    this.waiting.clear();
  }

  run(lines: string[]): Promise<CheckedEntry[]> {
    if (this.failed) return Promise.reject(this.failed);
    const id = this.next++;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      this.workers[id % this.workers.length].postMessage({ id, lines });
    });
  }

  async close(): Promise<void> {
    await Promise.all(this.workers.map((w) => w.terminate()));
  }
}

/** Checks every line, yielding results in input order. */
export async function* checkEntries(lines: AsyncIterable<string>, key: KeyObject, opts: PoolOptions = {}): AsyncGenerator<CheckedEntry> {
  const nWorkers = opts.workers ?? availableParallelism();
  const batchSize = opts.batchSize ?? 512;
  const inlineFirst = nWorkers === 0 ? Infinity : (opts.inlineFirst ?? 2048);
  const maxInFlight = Math.max(2, nWorkers * 2);
  let pool: WorkerPool | null = null;
  const pending: Promise<CheckedEntry[]>[] = [];
  let batch: string[] = [];
  let seen = 0;
  // A rejected batch that is not awaited yet must not crash the process as unhandled.
  const track = (p: Promise<CheckedEntry[]>) => (p.catch(() => undefined), pending.push(p));
  try {
    for await (const line of lines) {
      if (seen++ < inlineFirst) {
        yield checkEntryLine(line, key, opts.withEntries === true);
        continue;
      }
      pool ??= new WorkerPool(nWorkers, key.export({ type: 'spki', format: 'pem' }) as string, opts.withEntries === true);
      batch.push(line);
      if (batch.length >= batchSize) {
        track(pool.run(batch));
        batch = [];
        while (pending.length >= maxInFlight) yield* await pending.shift()!;
      }
    }
    if (batch.length > 0 && pool) track(pool.run(batch));
    while (pending.length > 0) yield* await pending.shift()!;
  } finally {
    await pool?.close();
  }
}
