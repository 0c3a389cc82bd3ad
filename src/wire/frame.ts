// Newline-delimited framing for MCP's stdio transport. Guards against a peer that never sends a
// newline: a line longer than the maximum is reported once (frame_too_large) and its bytes are
// dropped until the next newline, so the framer never holds more than maxLineBytes of one line.
export const DEFAULT_MAX_LINE_BYTES = 4 * 1024 * 1024;

/** A complete line (without `\n` and one trailing `\r`), or the notice that a line was too large. */
export type FrameEvent = { kind: 'line'; line: Buffer } | { kind: 'tooLarge'; tooLarge: true };

export interface LineFramerOptions {
  /** Largest line accepted, in bytes, counting everything before the `\n` (a `\r` included). */
  maxLineBytes?: number;
}

export class LineFramer {
  readonly maxLineBytes: number;
  private parts: Buffer[] = [];
  private size = 0;
  private discarding = false;

  constructor(opts: LineFramerOptions = {}) {
    this.maxLineBytes = opts.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES;
    if (!Number.isInteger(this.maxLineBytes) || this.maxLineBytes < 1) throw new RangeError('maxLineBytes must be a positive integer');
  }

  /** Bytes of the current, unfinished line held right now (never more than maxLineBytes). */
  get bufferedBytes(): number {
    return this.size;
  }

  /** Feeds a chunk; returns the events it completes, in order. Empty lines produce nothing. */
  push(chunk: Uint8Array): FrameEvent[] {
    const buf = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    const events: FrameEvent[] = [];
    let start = 0;
    while (start <= buf.length) {
      const nl = buf.indexOf(0x0a, start);
      const end = nl < 0 ? buf.length : nl;
      if (this.discarding) {
        if (nl >= 0) this.discarding = false;
      } else {
        this.append(buf, start, end, events);
        if (nl >= 0 && !this.discarding) this.emitLine(events);
        else if (nl >= 0) this.discarding = false; // the oversize line ended in this very segment
      }
      if (nl < 0) break;
      start = nl + 1;
    }
    return events;
  }

  /** Ends the stream: a final line without `\n` counts as a line. The framer is reset. */
  end(): FrameEvent[] {
    const events: FrameEvent[] = [];
    if (!this.discarding) this.emitLine(events);
    this.parts = [];
    this.size = 0;
    this.discarding = false;
    return events;
  }

  private append(buf: Buffer, start: number, end: number, events: FrameEvent[]): void {
    const len = end - start;
    if (len === 0) return;
    if (this.size + len > this.maxLineBytes) {
      this.parts = [];
      this.size = 0;
      this.discarding = true;
      events.push({ kind: 'tooLarge', tooLarge: true });
      return;
    }
    // Copy, so a short tail does not keep a whole large chunk alive.
    this.parts.push(Buffer.from(buf.subarray(start, end)));
    this.size += len;
  }

  private emitLine(events: FrameEvent[]): void {
    if (this.size === 0) return;
    let line = this.parts.length === 1 ? this.parts[0]! : Buffer.concat(this.parts, this.size);
    this.parts = [];
    this.size = 0;
    if (line[line.length - 1] === 0x0d) line = line.subarray(0, line.length - 1);
    if (line.length > 0) events.push({ kind: 'line', line });
  }
}
