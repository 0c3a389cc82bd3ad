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

export class Upstream {
  private readonly child: ChildProcess;
  private exited = false;

  constructor(command: string, args: string[], events: UpstreamEvents) {
    this.child = spawn(command, args, { stdio: ['pipe', 'pipe', 'inherit'] });
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
    this.child.on('error', () => report(null, null)); // spawn failure (command not found)
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
