// Server-sent events with each event's exact bytes kept, for a door that passes an event on
// unchanged: it writes the bytes it received, never a re-encoding of what it understood. The
// bytes are cut at the blank line that ends an event; what they mean is read by the one strict
// reader (sse.ts), so this file decides nothing about the format.
import { SseError, SseParser } from './sse.js';
import { decodeUtf8 } from './utf8.js';

export interface RawSseEvent {
  /** The event's bytes, its closing blank line included. */
  raw: Uint8Array;
  /** `event:`; absent means the default type, `message`. */
  type?: string;
  /** The data (UTF-8), or undefined for an event without data (a comment, a keep-alive). */
  data?: string;
}

const LF = 0x0a;
const CR = 0x0d;

export class RawSseReader {
  /**
   * The bytes not yet cut into events are buf[start, end). The buffer grows by doubling and the
   * scan resumes where it stopped, so an event that arrives in many small chunks costs its
   * length once, not once a chunk (a 4 MB event in 4 KB chunks took 14 s of CPU).
   */
  private buf: Buffer = Buffer.alloc(0);
  private start = 0;
  private end = 0;
  /** Where the scan for the blank line resumes, and whether that is the start of a line. */
  private scanned = 0;
  private lineStart = true;
  private readonly parser: SseParser;

  constructor(private readonly maxEventBytes: number) {
    this.parser = new SseParser(maxEventBytes);
  }

  /** Bytes in, the events they complete out. Throws SseError, or WireError for data that is not UTF-8. */
  push(chunk: Uint8Array): RawSseEvent[] {
    this.append(chunk);
    return this.take(false);
  }

  /** The stream ended: the event a final CR completes; `cut` is true when bytes remain that end no event. */
  finish(): { events: RawSseEvent[]; cut: boolean } {
    const events = this.take(true);
    return { events, cut: this.end > this.start };
  }

  /** Move what is held to the front (once a chunk), and grow by doubling when it does not fit. */
  private append(chunk: Uint8Array): void {
    const held = this.end - this.start;
    if (held + chunk.length > this.buf.length) {
      const grown = Buffer.allocUnsafe(Math.max(held + chunk.length, 2 * this.buf.length, 4096));
      this.buf.copy(grown, 0, this.start, this.end);
      this.buf = grown;
    } else if (this.start > 0) this.buf.copyWithin(0, this.start, this.end);
    this.scanned -= this.start;
    this.start = 0;
    this.end = held;
    this.buf.set(chunk, this.end);
    this.end += chunk.length;
  }

  private take(atEnd: boolean): RawSseEvent[] {
    const out: RawSseEvent[] = [];
    for (let end = this.eventEnd(atEnd); end >= 0; end = this.eventEnd(atEnd)) {
      // A copy: the buffer is reused, the event's bytes may be held (a call waiting for its decision).
      const raw = Buffer.from(this.buf.subarray(this.start, end));
      this.start = end;
      // Whole or in pieces, an event is bounded by its own bytes: the bound must not depend on how the stream was cut.
      if (raw.length > this.maxEventBytes) throw new SseError('frame_too_large', `an event longer than ${this.maxEventBytes} bytes`);
      const [event] = this.parser.push(raw); // a whole event: one at most
      out.push({ raw, ...(event?.type !== undefined ? { type: event.type } : {}), ...(event ? { data: decodeUtf8(event.data) } : {}) });
    }
    if (this.end - this.start > this.maxEventBytes) throw new SseError('frame_too_large', `an event longer than ${this.maxEventBytes} bytes`);
    return out;
  }

  /** The offset just past the blank line ending the first event, or -1. A CR at the very end may be half a CRLF: wait. */
  private eventEnd(atEnd: boolean): number {
    const b = this.buf;
    let i = this.scanned;
    let lineStart = this.lineStart;
    while (i < this.end) {
      const c = b[i];
      if (c !== CR && c !== LF) {
        lineStart = false;
        i++;
        continue;
      }
      if (c === CR) {
        if (i + 1 >= this.end && !atEnd) break;
        if (i + 1 < this.end && b[i + 1] === LF) i++;
      }
      i++;
      if (lineStart) {
        this.scanned = i;
        this.lineStart = true;
        return i;
      }
      lineStart = true;
    }
    this.scanned = i;
    this.lineStart = lineStart;
    return -1;
  }
}

/** One event as bytes: `event:` when given, then the data, one `data:` line per line. */
export function encodeEvent(data: string, type?: string): Uint8Array {
  const lines = data.split(/\r\n|\r|\n/).map((l) => `data: ${l}\n`);
  return Buffer.from(`${type !== undefined ? `event: ${type}\n` : ''}${lines.join('')}\n`);
}
