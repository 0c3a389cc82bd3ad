// The stdio door: the host's newline-delimited JSON-RPC on the gate's stdin and stdout, as a
// Transport for the relay. It frames and nothing else. A paused door keeps the lines it has
// framed and reads on only while they hold less than one line's worth (maxLineBytes), so the
// host's flood waits in the pipe; what it reads meanwhile is offered to onurgent, so that a
// cancellation, or an answer to the server's request, behind the flood still reaches its call.
import type { Readable, Writable } from 'node:stream';
import { LineFramer, type FrameEvent } from '../wire/frame.js';
import type { InboundFrame, Transport, TransportClosed } from './transport.js';
import { writeBatched } from '../util/batched-write.js';
import { UnreadBound } from './unread-bound.js';

/** A framer's event; `unterminated`: the last line, which stdin ended before its newline. */
type Framed = FrameEvent & { unterminated?: true };

/**
 * Bytes written to the host and not yet read by it past which the door reports itself full: the
 * relay then reads neither the server nor the host until the host catches up.
 */
export const HOST_UNREAD_HIGH_WATER = 8 * 1024 * 1024;

/** What a queued event costs: its bytes, and a little for itself (a flood of refused lines has none). */
const weight = (ev: Framed) => 256 + (ev.kind === 'line' ? ev.line.length : 0);

export class StdioHostTransport implements Transport {
  onframe?: (frame: InboundFrame) => void;
  onclose?: (info: TransportClosed) => void;
  onerror?: (error: Error) => void;
  onurgent?: (bytes: Uint8Array) => boolean;
  onfull?: (full: boolean) => void;
  private readonly unread = new UnreadBound(HOST_UNREAD_HIGH_WATER, (full) => this.onfull?.(full));
  private readonly framer: LineFramer;
  private queue: Framed[] = [];
  /** Bytes of the lines in the queue. */
  private queued = 0;
  private paused = false;
  private closed = false;
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
    const ended = () => {
      if (this.ended) return;
      this.ended = true;
      this.deliver(this.framer.end().map((ev) => (ev.kind === 'line' ? { ...ev, unterminated: true } : ev)));
    };
    this.input.on('end', ended);
    // Destroyed without an end (the host went away: its stdout broke): the host is gone all the same.
    this.input.on('close', ended);
    this.output.on('error', (e) => this.onerror?.(e));
  }

  send(message: string): void {
    if (!this.output.writable) return;
    writeBatched(this.output, message + '\n');
    this.unread.wrote(this.output);
  }

  /** Stop reading the host for good; what is already framed is dropped, writes still go out. */
  async close(): Promise<void> {
    this.queue = [];
    this.queued = 0;
    this.paused = true;
    this.closed = true;
    this.input.pause();
  }

  pause(): void {
    this.paused = true;
  }

  resume(): void {
    if (this.closed) return;
    this.paused = false;
    this.deliver([]);
  }

  private deliver(events: Framed[]): void {
    if (this.closed) return;
    for (const ev of events) {
      if (ev.kind === 'tooLargeAnswer') continue; // a host sends requests: its refusal comes at the line's end
      // Read while paused: acted on now if the relay can (it may not reorder anything else).
      if (this.paused && ev.kind === 'line' && !ev.unterminated && this.onurgent?.(ev.line)) continue;
      this.queue.push(ev);
      this.queued += weight(ev);
    }
    while (!this.paused && this.queue.length > 0) {
      const ev = this.queue.shift()!;
      this.queued -= weight(ev);
      if (ev.kind === 'line') this.onframe?.(ev.unterminated ? { kind: 'frame', bytes: ev.line, unterminated: true } : { kind: 'frame', bytes: ev.line });
      else if (ev.kind === 'tooLargeEnd') this.onframe?.({ kind: 'oversize', id: ev.id, limit: this.maxLineBytes, digest: ev.digest });
    }
    if (this.closed) return;
    // What a paused door holds stays about two lines' worth: the queue's and the framer's.
    if ((this.paused && this.queued >= this.maxLineBytes) || this.ended) this.input.pause();
    else this.input.resume();
    // Everything read was delivered: the host is gone, paused or not (a call held for a place at
    // the server must hear it, not wait for a place the host no longer needs).
    if (this.ended && this.queue.length === 0) this.finish();
  }

  private finish(): void {
    const cb = this.onclose;
    this.onclose = undefined;
    cb?.({ code: null });
  }
}
