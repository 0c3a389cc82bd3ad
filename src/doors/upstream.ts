// The upstream MCP server as a child process speaking newline-delimited JSON-RPC on stdio.
// Its stderr goes to the gate's stderr unchanged (the gate never logs it itself).
import { spawn, type ChildProcess } from 'node:child_process';
import { LineFramer } from '../wire/frame.js';

/** Server lines are the server's business and pass unchanged; this cap only bounds memory. */
const MAX_SERVER_LINE = 64 * 1024 * 1024;

export interface UpstreamEvents {
  line(line: Buffer): void;
  exit(code: number | null, signal: NodeJS.Signals | null): void;
}

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

/** The upstream's environment: the host-given one minus the gate's own (`CLOAKPIPE_*`). */
export function upstreamEnv(env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(env)) if (!k.toUpperCase().startsWith('CLOAKPIPE_')) out[k] = v;
  return out;
}

/**
 * Spawns the upstream with its own environment; `onStartError` hears once, with the reason,
 * when the OS could not start it at all (then no exit status follows: there was no process).
 */
export function spawnUpstream(command: string, args: string[], onStartError: (e: UpstreamStartError) => void): ChildProcess {
  const child = spawn(command, args, { stdio: ['pipe', 'pipe', 'inherit'], env: upstreamEnv() });
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

export class Upstream {
  private readonly child: ChildProcess;
  private exited = false;
  /** Set when the upstream could not be started: the gate then exits 2 with this reason. */
  startError: UpstreamStartError | null = null;

  constructor(command: string, args: string[], events: UpstreamEvents) {
    this.child = spawnUpstream(command, args, (e) => {
      this.startError = e;
      report(null, null);
    });
    const framer = new LineFramer({ maxLineBytes: MAX_SERVER_LINE });
    this.child.stdout!.on('data', (chunk: Buffer) => {
      for (const ev of framer.push(chunk)) if (ev.kind === 'line') events.line(ev.line);
    });
    this.child.stdout!.on('end', () => {
      for (const ev of framer.end()) if (ev.kind === 'line') events.line(ev.line);
    });
    this.child.stdin!.on('error', () => undefined); // EPIPE after the server died: exit reports it
    let reported = false;
    const report = (code: number | null, signal: NodeJS.Signals | null) => {
      this.exited = true;
      if (!reported) {
        reported = true;
        events.exit(code, signal);
      }
    };
    this.child.on('close', report);
  }

  get alive(): boolean {
    return !this.exited;
  }

  send(text: string): boolean {
    if (this.exited || !this.child.stdin!.writable) return false;
    this.child.stdin!.write(text);
    return true;
  }

  /** Close its stdin, then escalate if it does not leave. */
  stop(graceMs = 5000) {
    if (this.exited) return;
    this.child.stdin!.end();
    const term = setTimeout(() => this.child.kill('SIGTERM'), graceMs);
    const kill = setTimeout(() => this.child.kill('SIGKILL'), graceMs * 2);
    term.unref();
    kill.unref();
    this.child.once('close', () => {
      clearTimeout(term);
      clearTimeout(kill);
    });
  }
}
