// A Transport over memory, for driving the relay in-process: `peer.deliver()` plays the other
// side's frames, `sent` keeps what the relay wrote to it.
import type { InboundFrame, Transport, TransportClosed } from '../../src/doors/transport.js';

export class MemoryTransport implements Transport {
  onframe?: (frame: InboundFrame) => void;
  onclose?: (info: TransportClosed) => void;
  onerror?: (error: Error) => void;
  readonly sent: any[] = [];
  paused = false;
  private readonly held: InboundFrame[] = [];
  private listeners: ((msg: any) => void)[] = [];

  constructor(private readonly respond?: (msg: any, t: MemoryTransport) => void) {}

  async start(): Promise<void> {}

  send(message: string): void {
    const msg = JSON.parse(message);
    this.sent.push(msg);
    for (const l of this.listeners.splice(0)) l(msg);
    this.respond?.(msg, this);
  }

  async close(): Promise<void> {
    this.end({ code: 0 });
  }

  pause(): void {
    this.paused = true;
  }

  resume(): void {
    this.paused = false;
    while (!this.paused && this.held.length > 0) this.onframe?.(this.held.shift()!);
  }

  deliver(msg: object | string): void {
    const frame: InboundFrame = { kind: 'frame', bytes: Buffer.from(typeof msg === 'string' ? msg : JSON.stringify(msg)) };
    if (this.paused) this.held.push(frame);
    else this.onframe?.(frame);
  }

  end(info: TransportClosed = { code: null }): void {
    const cb = this.onclose;
    this.onclose = undefined;
    cb?.(info);
  }

  /** The next message the relay sends to this side. */
  next(): Promise<any> {
    return new Promise((r) => this.listeners.push(r));
  }
}
