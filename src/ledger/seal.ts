// Sealing a run of entries (ADR 042): each body gets `prev`, the hash of the entry before it
// (signature included), and `sig`, Ed25519 over its RFC 8785 bytes without `sig`; so a run can
// only be signed one entry after another. Where the key allows, a run is sealed off the main
// thread (a signing thread with the key file's KeyObject, or a token's session lent to it) while
// the gate reads and checks the next calls; a short run is sealed inline, where a thread round
// trip would cost more than the signatures it moves.
import { Worker } from 'node:worker_threads';
import { SignerUnavailable, type Signer, type ThreadKey } from '../core/signer.js';
import { canonicalize } from '../core/canonical.js';
import { sha256Hex } from '../core/digest.js';
import type { EntryBody } from './entry.js';

/** One sealed entry: its signature, its stored bytes and their hash. */
export interface Sealed {
  prev: string;
  sig: string;
  stored: string;
  hash: string;
}

/**
 * The stored entry: `signed` (the canonical body, `prev` included) with `"sig":"…"` in its sorted
 * place. Only the members that sort after `sig` are written again (a few short ones), not the
 * whole body: canonical JSON lists members in key order, so removing or inserting one member
 * leaves the others' text as it is.
 */
export function withSig(signed: string, body: Record<string, unknown>, sig: string): string {
  const after: Record<string, unknown> = {};
  let n = 0;
  for (const k of Object.keys(body)) {
    if (k === 'sig') return canonicalize({ ...body, sig }); // a body that names sig itself: write it whole
    if (k > 'sig' && body[k] !== undefined) {
      after[k] = body[k];
      n++;
    }
  }
  const member = '"sig":' + JSON.stringify(sig);
  if (n === 0) {
    const head = signed.slice(0, -1);
    return head + (head === '{' ? '' : ',') + member + '}';
  }
  const inner = canonicalize(after).slice(1, -1);
  const head = signed.slice(0, signed.length - inner.length - 1); // ends with ',' or is '{'
  return head + member + ',' + inner + '}';
}

/**
 * An entry sealed before its group began (Ledger.preseal, ADR 045): used for the body whose
 * canonical bytes (`prev` included) are exactly `signed`, and for no other. Ed25519 is
 * deterministic, so the seal is the one signing those bytes again would make.
 */
export interface PreSealed {
  signed: string;
  sealed: Sealed;
}

/**
 * A copy of `body` with `prev`, its members in RFC 8785 order: canonicalize then writes it with
 * one native JSON.stringify (its fast path) instead of a string built member by member, which
 * was the gate's largest allocation per call (docs/performance.md, the young generation's pauses).
 * The bytes are the same either way: canonical JSON does not depend on insertion order.
 */
function linkedBody(body: EntryBody, prev: string): Record<string, unknown> {
  const src = body as unknown as Record<string, unknown>;
  const keys = Object.keys(src);
  if (!('prev' in src)) keys.push('prev');
  keys.sort();
  const linked: Record<string, unknown> = {}; // not Object.create(null): V8 keeps that one as a slow dictionary
  for (const k of keys) {
    const value = k === 'prev' ? prev : src[k];
    // A member named "__proto__" stays a member (an assignment would set the prototype).
    if (k === '__proto__') Object.defineProperty(linked, k, { value, enumerable: true, writable: true, configurable: true });
    else linked[k] = value;
  }
  return linked;
}

/** One body sealed after the entry whose hash is `prev`; `signed` is what the signature covers. */
export function sealOne(prev: string, body: EntryBody, sign: (message: Buffer) => Buffer): PreSealed {
  const linked = linkedBody(body, prev);
  const signed = canonicalize(linked);
  return { signed, sealed: seal(prev, linked, signed, sign) };
}

function seal(prev: string, linked: Record<string, unknown>, signed: string, sign: (message: Buffer) => Buffer): Sealed {
  const sig = sign(Buffer.from(signed, 'utf8')).toString('base64');
  const stored = withSig(signed, linked, sig);
  return { prev, sig, stored, hash: 'sha256:' + sha256Hex(stored) };
}

/**
 * Seals `bodies` in turn after the entry whose hash is `prev`, signing with `sign`; a body whose
 * canonical bytes are `ahead`'s takes `ahead`'s seal instead of a new signature.
 */
export function sealRun(prev: string, bodies: readonly EntryBody[], sign: (message: Buffer) => Buffer, ahead: PreSealed | null = null): Sealed[] {
  const out: Sealed[] = [];
  for (const body of bodies) {
    const linked = linkedBody(body, prev);
    const signed = canonicalize(linked);
    const s = ahead !== null && signed === ahead.signed ? ahead.sealed : seal(prev, linked, signed, sign);
    out.push(s);
    prev = s.hash;
  }
  return out;
}

/** A run being sealed while it is appended: the signing thread signs each body as it comes. */
export interface SealingRun {
  /** One more body after those pushed (its prev: the hash of the one before it). */
  push(body: EntryBody): void;
  /** Forget the bodies from index `n` on (their job rolled back). */
  cut(n: number): void;
  /** Every body is in: their seals, in order. */
  end(): Promise<Sealed[]>;
  /** Give up on the run (the ledger seals what it holds inline instead). */
  abandon(): void;
}

export interface ChainSealer {
  /** Runs shorter than this are sealed inline by the ledger. */
  readonly inlineBelow: number;
  /** A run after the entry whose hash is `prev`, sealed as its bodies are pushed. */
  start(prev: string): SealingRun;
  close(): void;
}

/** How long a run's seals may take once its last body is in, before the thread is given up on. */
const ANSWER_WITHIN_MS = 10_000;

/**
 * The signing thread did not answer in time: it may be held inside a token's C_Sign, on the
 * session lent for the run, which therefore cannot be closed nor the module finalised until
 * `returned` (the thread's late answer). The sealer starts a new thread for the next run.
 */
export class ThreadHeld extends SignerUnavailable {
  constructor(
    readonly returned: Promise<void>,
    ms: number,
  ) {
    super(`the signing thread did not answer within ${ms / 1000} s`);
    this.name = 'ThreadHeld';
  }
}

interface Waiting {
  resolve: (v: Sealed[]) => void;
  reject: (e: Error) => void;
}

type ToThread = { t: 'begin'; id: number; prev: string; key: ThreadKey } | { t: 'push'; id: number; bodies: EntryBody[] } | { t: 'cut'; id: number; n: number } | { t: 'end'; id: number };

/** Seals in a signing thread, with the key lent for each run (it never leaves this process). */
class WorkerSealer implements ChainSealer {
  private worker: Worker | null = null;
  private next = 0;
  private readonly waiting = new Map<number, Waiting>();
  /** Runs given up on, by id: told when their thread answers after all. */
  private readonly held = new Map<number, () => void>();

  constructor(
    private readonly signer: Signer,
    private readonly thread: URL,
    readonly inlineBelow: number,
    private readonly pushBatch: number,
    private readonly answerWithinMs = ANSWER_WITHIN_MS,
  ) {}

  private started(): Worker {
    if (this.worker) return this.worker;
    const w = new Worker(this.thread);
    w.on('message', (m: { id: number; sealed?: Sealed[]; error?: string }) => {
      const back = this.held.get(m.id);
      if (back) {
        this.held.delete(m.id);
        back();
        return;
      }
      const got = this.waiting.get(m.id);
      if (!got) return;
      this.waiting.delete(m.id);
      if (this.waiting.size === 0) w.unref();
      if (m.sealed) got.resolve(m.sealed);
      else got.reject(new Error(`sealing failed in the signing thread (${m.error ?? 'error'})`)); // a code, never a value
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

  start(prev: string): SealingRun {
    const id = this.next++;
    // Until the key is lent (a token lends one run at a time), what is pushed waits here.
    let queued: ToThread[] | null = [];
    let w: Worker | null = null;
    const send = (m: ToThread) => (queued ? queued.push(m) : w!.postMessage(m));
    let ended: Promise<Sealed[]> | null = null;
    let finish!: () => void;
    const finished = new Promise<void>((r) => (finish = r));
    const sealed = this.signer.lendToThread!(async (key) => {
      w = this.started();
      const result = new Promise<Sealed[]>((resolve, reject) => this.waiting.set(id, { resolve, reject }));
      w.ref(); // a run in progress keeps the process alive until it is sealed
      w.postMessage({ t: 'begin', id, prev, key } satisfies ToThread);
      for (const m of queued!) w.postMessage(m);
      queued = null;
      await finished; // the run is lent until every body is in
      return this.answered(w, id, result);
    });
    const end = () => {
      if (!ended) {
        send({ t: 'end', id });
        finish();
        ended = sealed;
      }
      return ended;
    };
    // Pushed bodies not yet sent; `sent` were.
    let batch: EntryBody[] = [];
    let sent = 0;
    const flush = () => {
      if (batch.length === 0) return;
      send({ t: 'push', id, bodies: batch });
      sent += batch.length;
      batch = [];
    };
    return {
      push: (body) => {
        batch.push(body);
        if (batch.length >= this.pushBatch) flush();
      },
      cut: (n) => {
        if (n >= sent) batch.length = Math.min(batch.length, n - sent);
        else {
          batch = [];
          sent = n;
          send({ t: 'cut', id, n });
        }
      },
      end: () => {
        if (!ended) flush();
        return end();
      },
      abandon: () => void end().catch(() => undefined), // ended all the same: the loan returns
    };
  }

  // A thread that does not answer in time is left to itself (unreferenced: it no longer keeps the
  // process alive) and its run fails; what it held is given back when it answers, if ever.
  private answered(w: Worker, id: number, result: Promise<Sealed[]>): Promise<Sealed[]> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        if (!this.waiting.delete(id)) return;
        if (this.worker === w) this.worker = null;
        w.unref();
        reject(new ThreadHeld(new Promise<void>((back) => this.held.set(id, back)), this.answerWithinMs));
      }, this.answerWithinMs);
      result.then(
        (v) => {
          clearTimeout(timer);
          resolve(v);
        },
        (e: Error) => {
          clearTimeout(timer);
          reject(e);
        },
      );
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
  /** The signing thread's script (keys/signing-thread.js: the key's side of sealing). */
  thread: URL;
  /** Runs shorter than this are sealed inline (default 4; 1 for a key slow to sign inline). */
  inlineBelow?: number;
  /** Bodies are sent to the thread this many at a time (default 8; 1 for a key slow to sign,
   *  whose thread would otherwise wait while the batch fills). One message per body costs the
   *  main thread a clone and a wake-up of the thread each. */
  pushBatch?: number;
}

/** The sealer the key allows, or null: every run is then sealed inline. */
export function chainSealer(signer: Signer, opts: SealerOptions): ChainSealer | null {
  if (!signer.lendToThread) return null;
  return new WorkerSealer(signer, opts.thread, opts.inlineBelow ?? (signer.slowInline ? 1 : 4), opts.pushBatch ?? (signer.slowInline ? 1 : 8));
}
