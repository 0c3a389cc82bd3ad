// The stdio door: the host's newline-delimited JSON-RPC on the gate's stdin and stdout, as a
// Transport for the relay. It frames and nothing else; a paused door keeps the lines it has
// already framed and reads no more from stdin, so the host's flood waits in the pipe.
import type { Readable, Writable } from 'node:stream';
import { LineFramer, type FrameEvent } from '../wire/frame.js';
import type { InboundFrame, Transport, TransportClosed } from './transport.js';
import { writeBatched } from '../util/batched-write.js';

/** A framer's event; `unterminated`: the last line, which stdin ended before its newline. */
type Framed = FrameEvent & { unterminated?: true };

export class StdioHostTransport implements Transport {
  onframe?: (frame: InboundFrame) => void;
  onclose?: (info: TransportClosed) => void;
  onerror?: (error: Error) => void;
  private readonly framer: LineFramer;
  private queue: Framed[] = [];
  private paused = false;
  private ended = false;

  constructor(
    private readonly input: Readable,
    private readonly output: Writable,
    readonly maxLineBytes: number,
  ) {
    this.framer = new LineFramer({ maxLineBytes, recoverIds: true });
  }

  async start(): Promise<void> {
    this.input.on('data', (chunk: Buffer) => this.deliver(this.framer.push(chunk)));
    this.input.on('end', () => {
      this.ended = true;
      this.deliver(this.framer.end().map((ev) => (ev.kind === 'line' ? { ...ev, unterminated: true } : ev)));
    });
    this.output.on('error', (e) => this.onerror?.(e));
  }

  send(message: string): void {
    if (this.output.writable) writeBatched(this.output, message + '\n');
  }

  /** Stop reading the host for good; what is already framed is dropped, writes still go out. */
  async close(): Promise<void> {
    this.queue = [];
    this.paused = true;
    this.input.pause();
  }

  pause(): void {
    this.paused = true;
    this.input.pause();
  }

  resume(): void {
    this.paused = false;
    this.deliver([]);
    if (!this.paused && !this.ended) this.input.resume();
  }

  private deliver(events: Framed[]): void {
    this.queue.push(...events);
    while (!this.paused && this.queue.length > 0) {
      const ev = this.queue.shift()!;
      if (ev.kind === 'line') this.onframe?.(ev.unterminated ? { kind: 'frame', bytes: ev.line, unterminated: true } : { kind: 'frame', bytes: ev.line });
      else if (ev.kind === 'tooLargeEnd') this.onframe?.({ kind: 'oversize', id: ev.id, limit: this.maxLineBytes, digest: ev.digest });
    }
    if (this.paused && this.queue.length > 0) this.input.pause();
    if (this.ended && this.queue.length === 0 && !this.paused) this.finish();
  }

  private finish(): void {
    const cb = this.onclose;
    this.onclose = undefined;
    cb?.({ code: null });
  }
}
