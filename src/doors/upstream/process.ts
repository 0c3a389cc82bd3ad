// The upstream MCP server as a child process speaking newline-delimited JSON-RPC on stdio, as
// a Transport for the relay. Its stderr goes to the gate's stderr unchanged (the gate never
// logs it itself). Its lines are framed here and parsed strictly by the relay.
import { spawn, type ChildProcess } from 'node:child_process';
import { LineFramer, type FrameEvent } from '../../wire/frame.js';
import type { InboundFrame, Transport, TransportClosed } from '../transport.js';

/** Bounds the memory one server line may take; a longer line is dropped, never forwarded. */
export const MAX_SERVER_LINE = 64 * 1024 * 1024;

export class ProcessTransport implements Transport {
  onframe?: (frame: InboundFrame) => void;
  onclose?: (info: TransportClosed) => void;
  onerror?: (error: Error) => void;
  private child: ChildProcess | undefined;
  private exited = false;

  constructor(
    readonly command: string,
    readonly args: string[],
  ) {}

  async start(): Promise<void> {
    const child = spawn(this.command, this.args, { stdio: ['pipe', 'pipe', 'inherit'] });
    this.child = child;
    const framer = new LineFramer({ maxLineBytes: MAX_SERVER_LINE });
    const deliver = (events: FrameEvent[]) => {
      for (const ev of events) {
        if (ev.kind === 'line') this.onframe?.({ kind: 'frame', bytes: ev.line });
        else if (ev.kind === 'tooLarge') this.onframe?.({ kind: 'oversize', id: null, limit: MAX_SERVER_LINE });
      }
    };
    child.stdout!.on('data', (chunk: Buffer) => deliver(framer.push(chunk)));
    child.stdout!.on('end', () => deliver(framer.end()));
    child.stdin!.on('error', () => undefined); // EPIPE after the server died: exit reports it
    let reported = false;
    const report = (code: number | null, signal: NodeJS.Signals | null) => {
      this.exited = true;
      if (!reported) {
        reported = true;
        this.onclose?.({ code, signal });
      }
    };
    child.on('error', () => report(null, null)); // spawn failure (command not found)
    child.on('close', report);
  }

  get alive(): boolean {
    return this.child !== undefined && !this.exited;
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  send(message: string): void {
    if (!this.alive || !this.child!.stdin!.writable) return;
    this.child!.stdin!.write(message + '\n');
  }

  /** Close its stdin, then escalate if it does not leave. */
  async close(graceMs = 5000): Promise<void> {
    const child = this.child;
    if (!child || this.exited) return;
    child.stdin!.end();
    const term = setTimeout(() => child.kill('SIGTERM'), graceMs);
    const kill = setTimeout(() => child.kill('SIGKILL'), graceMs * 2);
    term.unref();
    kill.unref();
    child.once('close', () => {
      clearTimeout(term);
      clearTimeout(kill);
    });
  }
}
