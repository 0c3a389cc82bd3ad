// A PKCS#11 module called from the main thread with a deadline (ADR 081). Each call runs on the
// module's token thread (token-thread.ts) while this thread waits for it, at most TOKEN_DEADLINE_MS:
// a token that hangs inside a call (a network HSM gone silent, a stopped daemon) costs the gate
// that much once, then every call fails at once until the hung one returns. The interface stays
// synchronous, like the binding it replaces, so the callers keep their shape.
import { MessageChannel, receiveMessageOnPort, Worker, type MessagePort } from 'node:worker_threads';
import type * as Pkcs11 from 'pkcs11js';
import { SignerUnavailable } from '../core/signer.js';

/** How long the main thread waits for one call to a token. */
export const TOKEN_DEADLINE_MS = 5_000;

const THREAD = new URL('./token-thread.js', import.meta.url);

/** A call the token did not answer in time (its code, for messages: never an argument). */
export class TokenLate extends SignerUnavailable {
  constructor(detail: string) {
    super(detail);
    this.name = 'TokenLate';
  }
}

/** Structured clone hands Buffers over as Uint8Arrays: Buffers again, at any depth. */
export function revive(v: unknown): unknown {
  if (v instanceof Uint8Array) return Buffer.from(v.buffer, v.byteOffset, v.byteLength);
  if (Array.isArray(v)) return v.map(revive);
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, revive(x)]));
  return v;
}

/**
 * Token calls that have not returned: a thread held inside a module. Node joins its threads when
 * the process exits, so such a process would never end (ADR 081): it ends by SIGKILL instead,
 * saying so, once everything it could do is done. Its exit status is then SIGKILL's (137 in a
 * shell), whatever the command's own was, and what the key had still to sign (a gate's shutdown
 * entry) is not signed (ADR 094).
 */
let held = 0;
let guarded = false;
/** Modules with a call past its deadline: held until their thread answers it. */
const lateModules = new Set<BoundedModule>();

export function tokenCallHeld(delta: 1 | -1): void {
  held += delta;
  guard();
}

function guard(): void {
  if (guarded) return;
  guarded = true;
  process.on('exit', (code) => {
    if (held === 0 && ![...lateModules].some((m) => m.stillLate())) return;
    process.stderr.write(
      `cloakpipe: a PKCS#11 token never answered a call and the thread held in it cannot be stopped: ending by SIGKILL (exit status 137) instead of status ${code}; nothing more was signed with its key\n`,
    );
    process.kill(process.pid, 'SIGKILL');
  });
}

export class BoundedModule {
  private readonly worker: Worker;
  private readonly port: MessagePort;
  private readonly done: Int32Array;
  private next = 0;
  /** The id of a call past its deadline, until it returns. */
  private late = 0;

  constructor(
    private readonly path: string,
    private readonly deadlineMs = TOKEN_DEADLINE_MS,
  ) {
    const state = new SharedArrayBuffer(4);
    this.done = new Int32Array(state);
    const { port1, port2 } = new MessageChannel();
    this.port = port1;
    this.worker = new Worker(THREAD, { workerData: { port: port2, state }, transferList: [port2] });
    this.worker.unref();
    this.port.unref();
  }

  /** Whether a call past its deadline has still not returned (its thread is held in the module). */
  stillLate(): boolean {
    return this.late !== 0 && Atomics.load(this.done, 0) < this.late;
  }

  /** Stops the token thread (when it is not held inside a call: such a thread cannot be stopped). */
  end(): void {
    if (!this.stillLate()) void this.worker.terminate();
  }

  /** The binding's methods, each through call(). */
  asBinding(): Pkcs11.PKCS11 {
    return new Proxy({} as Pkcs11.PKCS11, { get: (_, fn) => (...args: unknown[]) => this.call(String(fn), args) });
  }

  call(fn: string, args: unknown[]): unknown {
    if (this.late !== 0) {
      if (Atomics.load(this.done, 0) < this.late) throw new TokenLate(`the PKCS#11 module ${this.path} has not answered for more than ${this.deadlineMs / 1000} s`);
      while (receiveMessageOnPort(this.port)) {
        /* the late calls' answers: their callers gave up on them */
      }
      this.late = 0;
      lateModules.delete(this);
    }
    const id = ++this.next;
    this.port.postMessage({ id, fn, args });
    Atomics.wait(this.done, 0, id - 1, this.deadlineMs);
    if (Atomics.load(this.done, 0) < id) {
      this.late = id;
      lateModules.add(this);
      guard();
      throw new TokenLate(`the PKCS#11 module ${this.path} did not answer ${fn} within ${this.deadlineMs / 1000} s`);
    }
    const reply = receiveMessageOnPort(this.port)?.message as { id: number; result?: unknown; error?: string } | undefined;
    if (!reply || reply.id !== id) throw new SignerUnavailable(`the PKCS#11 module ${this.path} answered out of turn`);
    if (reply.error !== undefined) throw new Error(reply.error);
    return revive(reply.result);
  }
}
