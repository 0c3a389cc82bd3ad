// Sealing a run of entries (ADR 042): each body gets `prev`, the hash of the entry before it
// (signature included), and `sig`, Ed25519 over its RFC 8785 bytes without `sig`; so a run can
// only be signed one entry after another. Where the key allows, a run is sealed off the main
// thread (a worker holding a key file, or a token's asynchronous C_Sign) while the gate reads
// and checks the next calls; a short run is sealed inline, where a thread round trip would cost
// more than the signatures it moves.
import { Worker } from 'node:worker_threads';
import type { Signer } from '../core/signer.js';
import { canonicalBytes, canonicalize } from '../core/canonical.js';
import { sha256Hex } from '../core/digest.js';
import type { EntryBody } from './entry.js';

/** One sealed entry: its signature, its stored bytes and their hash. */
export interface Sealed {
  prev: string;
  sig: string;
  stored: string;
  hash: string;
}

function sealOne(prev: string, body: EntryBody, sig: Buffer | string): Sealed {
  const s = typeof sig === 'string' ? sig : sig.toString('base64');
  const stored = canonicalize({ ...body, prev, sig: s });
  return { prev, sig: s, stored, hash: 'sha256:' + sha256Hex(stored) };
}

function signedBytes(prev: string, body: EntryBody): Buffer {
  return canonicalBytes({ ...body, prev });
}

/** Seals `bodies` in turn after the entry whose hash is `prev`, signing with `sign`. */
export function sealRun(prev: string, bodies: readonly EntryBody[], sign: (message: Buffer) => Buffer): Sealed[] {
  const out: Sealed[] = [];
  for (const body of bodies) {
    const s = sealOne(prev, body, sign(signedBytes(prev, body)));
    out.push(s);
    prev = s.hash;
  }
  return out;
}

export interface ChainSealer {
  /** Runs shorter than this are sealed inline by the ledger. */
  readonly inlineBelow: number;
  seal(prev: string, bodies: readonly EntryBody[]): Promise<Sealed[]>;
  close(): void;
}

/** Seals with a token's asynchronous signature: this thread builds bytes, the token signs. */
class AsyncSealer implements ChainSealer {
  readonly inlineBelow = 1;
  constructor(private readonly signAsync: (m: Buffer) => Promise<Buffer>) {}

  async seal(prev: string, bodies: readonly EntryBody[]): Promise<Sealed[]> {
    const out: Sealed[] = [];
    for (const body of bodies) {
      const s = sealOne(prev, body, await this.signAsync(signedBytes(prev, body)));
      out.push(s);
      prev = s.hash;
    }
    return out;
  }

  close(): void {}
}

interface Waiting {
  resolve: (v: Sealed[]) => void;
  reject: (e: Error) => void;
}

/** Seals in a worker thread that holds the key file's private key (never leaves this process). */
class WorkerSealer implements ChainSealer {
  private worker: Worker | null = null;
  private next = 0;
  private readonly waiting = new Map<number, Waiting>();

  constructor(
    private readonly key: import('node:crypto').KeyObject,
    readonly inlineBelow: number,
  ) {}

  private start(): Worker {
    if (this.worker) return this.worker;
    const w = new Worker(new URL('./seal-worker.js', import.meta.url), { workerData: { key: this.key } });
    w.on('message', (m: { id: number; sealed?: Sealed[]; error?: string }) => {
      const got = this.waiting.get(m.id);
      if (!got) return;
      this.waiting.delete(m.id);
      if (this.waiting.size === 0) w.unref();
      if (m.sealed) got.resolve(m.sealed);
      else got.reject(new Error(`sealing failed in the signing thread (${m.error ?? 'error'})`));
    });
    const gone = (why: string) => {
      if (this.worker !== w) return;
      this.worker = null; // the next run starts a new one
      for (const got of this.waiting.values()) got.reject(new Error(`the signing thread ${why}`));
      this.waiting.clear();
    };
    w.on('error', () => gone('failed'));
    w.on('exit', () => gone('exited'));
    w.unref();
    this.worker = w;
    return w;
  }

  seal(prev: string, bodies: readonly EntryBody[]): Promise<Sealed[]> {
    const w = this.start();
    const id = this.next++;
    return new Promise<Sealed[]>((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      w.ref(); // a run in progress keeps the process alive until it is sealed
      w.postMessage({ id, prev, bodies });
    });
  }

  close(): void {
    const w = this.worker;
    this.worker = null;
    for (const got of this.waiting.values()) got.reject(new Error('the signing thread was closed'));
    this.waiting.clear();
    void w?.terminate();
  }
}

export interface SealerOptions {
  /** Runs shorter than this are sealed inline (file keys; default 4). */
  inlineBelow?: number;
}

/** The sealer the key allows, or null: every run is then sealed inline. */
export function chainSealer(signer: Signer, opts: SealerOptions = {}): ChainSealer | null {
  if (signer.signAsync) return new AsyncSealer((m) => signer.signAsync!(m));
  const key = signer.workerKey?.();
  if (key) return new WorkerSealer(key, opts.inlineBelow ?? 4);
  return null;
}
