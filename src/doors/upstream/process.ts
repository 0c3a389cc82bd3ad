// The upstream MCP server as a child process speaking newline-delimited JSON-RPC on stdio, as
// a Transport for the relay. Its stderr goes to the gate's stderr unchanged (the gate never
// logs it itself). Its lines are framed here and parsed strictly by the relay.
import { spawn, type ChildProcess } from 'node:child_process';
import { LineFramer, type FrameEvent } from '../../wire/frame.js';
import type { InboundFrame, RequestLost, Transport, TransportClosed } from '../transport.js';
import type { RpcId } from '../../wire/jsonrpc.js';
import { writeBatched } from '../../util/batched-write.js';
import { watchForOrphan } from './orphan-watch.js';
import { UnreadBound } from '../unread-bound.js';

/** Bounds the memory one server line may take; a longer line is dropped, never forwarded. */
export const MAX_SERVER_LINE = 64 * 1024 * 1024;
/**
 * Bytes sent and not yet read by the server past which the transport reports it full: the host's
 * notifications are not bounded by --max-in-flight, and a server that stops reading its stdin
 * would otherwise have the gate hold all of them.
 */
export const SERVER_UNREAD_HIGH_WATER = 8 * 1024 * 1024;
const KILL_AFTER_MS = 2000;

/** Why the upstream could not be started; names the command and the OS's reason, nothing else. */
export class UpstreamStartError extends Error {}

const START_REASONS: Record<string, string> = {
  ENOENT: 'command not found',
  EACCES: 'not executable (permission denied)',
  ENOEXEC: 'not an executable format',
  EISDIR: 'is a directory',
  ENOTDIR: 'a path component is not a directory',
  E2BIG: 'argument list too long',
  EMFILE: 'too many open files',
  ENOMEM: 'out of memory',
};

/**
 * The upstream's environment: the host-given one minus the gate's own (`CLOAKPIPE_*`), and,
 * when the gate's store is a fleet's PostgreSQL, minus the store's password (PGPASSWORD): with
 * it the server could rewrite the fleet's operations, receipts and chains (ADR 078).
 */
export function upstreamEnv(env: NodeJS.ProcessEnv = process.env, o: { sharedStore?: boolean } = {}): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(env)) {
    if (k.toUpperCase().startsWith('CLOAKPIPE_')) continue;
    if (o.sharedStore && k === 'PGPASSWORD') continue;
    out[k] = v;
  }
  return out;
}

/**
 * Spawns the upstream with its own environment; `onStartError` hears once, with the reason,
 * when the OS could not start it at all (then no exit status follows: there was no process).
 */
export function spawnUpstream(command: string, args: string[], onStartError: (e: UpstreamStartError) => void, o: ProcessOptions = {}): ChildProcess {
  const child = spawn(command, args, { stdio: ['pipe', 'pipe', o.stderr ?? 'inherit'], env: upstreamEnv(o.env, { sharedStore: o.sharedStore }) });
  let started = false;
  child.once('spawn', () => (started = true));
  child.on('error', (e: NodeJS.ErrnoException) => {
    if (started) return; // a later error (kill of a dead process) is not a start failure
    started = true;
    const reason = START_REASONS[e.code ?? ''] ?? e.code ?? 'error';
    onStartError(new UpstreamStartError(`cannot start the upstream ${JSON.stringify(command)}: ${reason}`));
  });
  return child;
}

export interface ProcessOptions {
  /** The environment to start from (default: the gate's); CLOAKPIPE_* is removed either way. */
  env?: NodeJS.ProcessEnv;
  /** The gate's store is a fleet's PostgreSQL: its password is the gate's own, not the server's. */
  sharedStore?: boolean;
  /** Where the server's stderr goes (default: the gate's stderr). */
  stderr?: 'inherit' | 'ignore';
}

export class ProcessTransport implements Transport {
  onframe?: (frame: InboundFrame) => void;
  onclose?: (info: TransportClosed) => void;
  onerror?: (error: Error) => void;
  onfull?: (full: boolean) => void;
  onlost?: (id: RpcId, lost: RequestLost) => void;
  private readonly unread = new UnreadBound(SERVER_UNREAD_HIGH_WATER, (full) => this.onfull?.(full));
  private child: ChildProcess | undefined;
  private exited = false;
  private closing = false;

  constructor(
    readonly command: string,
    readonly args: string[],
    private readonly options: ProcessOptions = {},
  ) {}

  async start(): Promise<void> {
    let reported = false;
    const report = (code: number | null, signal: NodeJS.Signals | null, startError?: UpstreamStartError) => {
      this.exited = true;
      if (reported) return;
      reported = true;
      this.onclose?.({ code, signal, ...(startError ? { startError } : {}) });
    };
    const child = spawnUpstream(this.command, this.args, (e) => report(null, null, e), this.options);
    this.child = child;
    // recoverIds: an oversize line is reported at its end with its digest (for the log), and the
    // request it answers as soon as that can be read.
    const framer = new LineFramer({ maxLineBytes: MAX_SERVER_LINE, recoverIds: true });
    const deliver = (events: FrameEvent[], unterminated = false) => {
      for (const ev of events) {
        if (ev.kind === 'line') this.onframe?.(unterminated ? { kind: 'frame', bytes: ev.line, unterminated } : { kind: 'frame', bytes: ev.line });
        else if (ev.kind === 'tooLargeEnd') this.onframe?.({ kind: 'oversize', id: ev.id, limit: MAX_SERVER_LINE, digest: ev.digest });
        // An answer that cannot be read: its request ends now, not when the line does (if ever).
        else if (ev.kind === 'tooLargeAnswer') this.onlost?.(ev.id, { cause: 'frame_too_large', gone: false });
      }
    };
    child.stdout!.on('data', (chunk: Buffer) => deliver(framer.push(chunk)));
    // A last line without its newline: the server died mid-write (the relay drops it).
    child.stdout!.on('end', () => deliver(framer.end(), true));
    child.stdin!.on('error', () => undefined); // EPIPE after the server died: exit reports it
    child.on('close', (code, signal) => report(code, signal));
    // The upstream never outlives the gate, whatever way the gate's process exits; when it is
    // SIGKILLed (no code of the gate's runs), the watchdog stops it.
    const orphanGuard = () => void child.kill('SIGKILL');
    process.once('exit', orphanGuard);
    child.once('close', () => process.removeListener('exit', orphanGuard));
    watchForOrphan(child);
  }

  get alive(): boolean {
    return this.child !== undefined && !this.exited;
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  send(message: string): void {
    const stdin = this.child?.stdin;
    if (!this.alive || !stdin?.writable) return;
    writeBatched(stdin, message + '\n');
    this.unread.wrote(stdin);
  }

  /** Stop reading the server's stdout (the host is not reading what the gate sends it). */
  pause(): void {
    this.child?.stdout?.pause();
  }

  resume(): void {
    this.child?.stdout?.resume();
  }

  /**
   * Stop the server: close its stdin (a well-behaved server leaves), SIGTERM after termAfterMs,
   * SIGKILL 2 s after that (product.md 7a). onclose follows its exit.
   */
  async close(termAfterMs = 1000): Promise<void> {
    const child = this.child;
    if (!child || this.exited || this.closing) return;
    this.closing = true;
    child.stdin!.end();
    const term = setTimeout(() => child.kill('SIGTERM'), termAfterMs);
    const kill = setTimeout(() => child.kill('SIGKILL'), termAfterMs + KILL_AFTER_MS);
    child.once('close', () => {
      clearTimeout(term);
      clearTimeout(kill);
    });
  }
}
