// What a peer has not read yet, bounded: past a high-water mark of bytes written and not taken by
// the peer, the transport reports itself full, and again when the peer has drained it, so the
// relay stops reading the other side meanwhile. A peer that stops reading (a server stuck, a host
// that never reads its stdin's answers) would otherwise have the gate hold all it was sent.
import type { Writable } from 'node:stream';

export class UnreadBound {
  private full = false;

  constructor(
    private readonly highWater: number,
    private readonly onfull: (full: boolean) => void,
  ) {}

  /** Call after each write to `stream`. */
  wrote(stream: Writable): void {
    if (this.full || stream.writableLength < this.highWater) return;
    this.full = true;
    this.onfull(true);
    // Past the stream's own high-water mark a write returned false, so 'drain' follows; or the
    // peer left ('close', after EPIPE), and what waited for it is gone: nothing is held back then,
    // else the other side stayed paused and the session could never end.
    const clear = () => {
      stream.off('drain', clear);
      stream.off('close', clear);
      this.full = false;
      this.onfull(false);
    };
    stream.once('drain', clear);
    stream.once('close', clear);
  }
}
