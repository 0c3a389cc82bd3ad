// Parallel, ordered, bounded: entry lines go out in batches to worker threads (one per core) and
// come back in input order; at most a few batches are in flight, so memory stays bounded however
// long the ledger. Short ledgers are checked inline (starting workers would cost more).
// From a home, the workers read their own row ranges (checkRanges): the main thread only works
// out where each range starts (from the key bounds; it lists the keys only when they have gaps)
// and takes in what comes back, a few subtrees per range (ADR 044).
import type { KeyObject } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { fail } from './reasons.js';
import { checkEntryLine, type CheckedEntry } from './check-entry.js';
import type { RangeChecked } from './range.js';

export interface PoolOptions {
  /** Worker threads; 0 checks inline. Default: every core. */
  workers?: number;
  batchSize?: number;
  /**
   * Lines checked inline before workers start (small ledgers never start them). From a home: a
   * ledger no longer than this is checked inline, a longer one wholly by workers.
   */
  inlineFirst?: number;
  /** Return each parsed entry with its check (for readers that consume verified entries). */
  withEntries?: boolean;
}

class WorkerPool {
  private readonly workers: Worker[] = [];
  /** Requests each worker holds: a new one goes to the least busy (a slow thread gets fewer). */
  private readonly busy: number[] = [];
  private readonly waiting = new Map<number, { worker: number; resolve: (r: never) => void; reject: (e: unknown) => void }>();
  private next = 0;
  private failed: unknown = null;

  constructor(n: number, publicKeyPem: string, withEntries: boolean, ledgerDb?: string) {
    for (let i = 0; i < n; i++) {
      const w = new Worker(new URL('./worker.js', import.meta.url), { workerData: { publicKeyPem, withEntries, ledgerDb } });
      w.on('message', (m: { id: number; results: never }) => {
        const p = this.waiting.get(m.id);
        this.waiting.delete(m.id);
        if (p) this.busy[p.worker]--;
        p?.resolve(m.results);
      });
      w.on('error', (e) => this.abort(e));
      this.workers.push(w);
      this.busy.push(0);
    }
  }

  private abort(e: unknown) {
    this.failed = e;
    for (const p of this.waiting.values()) p.reject(e);
    this.waiting.clear();
  }

  run(lines: string[]): Promise<CheckedEntry[]> {
    return this.send({ lines });
  }

  /** `epochOffset`: how many leaves the running epoch tree is guessed to hold at the range's start. */
  runRange(range: RowRange, epochOffset: number): Promise<RangeChecked> {
    return this.send({ range, epochOffset });
  }

  private send<T>(msg: object): Promise<T> {
    if (this.failed) return Promise.reject(this.failed);
    const id = this.next++;
    const worker = this.busy.indexOf(Math.min(...this.busy));
    this.busy[worker]++;
    return new Promise<T>((resolve, reject) => {
      this.waiting.set(id, { worker, resolve: resolve as (r: never) => void, reject });
      this.workers[worker].postMessage({ id, ...msg });
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

/** Rows of a home's ledger: `count` rows from row key `fromSeq`, the `start`-th entry onwards. */
export interface RowRange {
  fromSeq: number;
  count: number;
  start: number;
}

/** The rows of a home's ledger, as verify's workers read them (source.ts). */
export interface LedgerRows {
  /** Row keys in order. */
  keys(): Iterable<number>;
  /** The first row key and the row count when the keys run without a gap, else null. */
  span(): { first: number; count: number } | null;
}

/**
 * Ranges of `size` rows, in order: from the key bounds when the keys run without a gap (the
 * main thread then reads no key at all), else by listing the keys.
 */
export function* rowRanges(rows: LedgerRows, size: number): Generator<RowRange> {
  const span = rows.span();
  if (span) {
    for (let start = 0; start < span.count; start += size) yield { fromSeq: span.first + start, count: Math.min(size, span.count - start), start };
    return;
  }
  let i = 0;
  let open: RowRange | null = null;
  for (const k of rows.keys()) {
    if (open && open.count === size) {
      yield open;
      open = null;
    }
    if (open) open.count++;
    else open = { fromSeq: k, count: 1, start: i };
    i++;
  }
  if (open) yield open;
}

/**
 * Every range checked by the workers, each reading its rows from `ledgerDb` itself; results in
 * order, a bounded number in flight. A range that comes back shorter than asked without a
 * fault means the rows changed under verify: reported as a source problem.
 */
export async function* checkRanges(ranges: Iterable<RowRange>, ledgerDb: string, key: KeyObject, opts: PoolOptions = {}): AsyncGenerator<RangeChecked> {
  const nWorkers = Math.max(1, opts.workers ?? availableParallelism());
  const pool = new WorkerPool(nWorkers, key.export({ type: 'spki', format: 'pem' }) as string, opts.withEntries === true, ledgerDb);
  const maxInFlight = Math.max(2, nWorkers * 2);
  const pending: { range: RowRange; result: Promise<RangeChecked> }[] = [];
  // Where the running epoch tree started, as far as the results back so far tell: the guess
  // each range's epoch fold is made for (a wrong guess costs the main thread time, never an answer).
  let epochStart = 0;
  const noteEpochs = (r: RangeChecked) => {
    const e = r.epochs.at(-1);
    if (e) epochStart = Math.max(epochStart, r.start + e.j);
  };
  const take = async () => {
    const { range, result } = pending.shift()!;
    const r = await result;
    if (r.fault === null && r.n !== range.count) fail('source_invalid', null, `the ledger changed while it was verified (rows from key ${range.fromSeq})`);
    return r;
  };
  try {
    for (const range of ranges) {
      const result = pool.runRange(range, range.start - epochStart);
      result.then(noteEpochs, () => undefined); // the error is awaited in order below, never unhandled
      pending.push({ range, result });
      while (pending.length >= maxInFlight) yield await take();
    }
    while (pending.length > 0) yield await take();
  } finally {
    await pool.close();
  }
}
