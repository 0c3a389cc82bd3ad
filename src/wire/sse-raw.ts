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
  private buf: Buffer = Buffer.alloc(0);
  /** Where the scan for the blank line resumes: always the start of a line. */
  private scanned = 0;
  private readonly parser: SseParser;

  constructor(private readonly maxEventBytes: number) {
    this.parser = new SseParser(maxEventBytes);
  }

  /** Bytes in, the events they complete out. Throws SseError, or WireError for data that is not UTF-8. */
  push(chunk: Uint8Array): RawSseEvent[] {
    this.buf = this.buf.length === 0 ? Buffer.from(chunk) : Buffer.concat([this.buf, chunk]);
    return this.take(false);
  }

  /** The stream ended: the event a final CR completes; `cut` is true when bytes remain that end no event. */
  finish(): { events: RawSseEvent[]; cut: boolean } {
    const events = this.take(true);
    return { events, cut: this.buf.length > 0 };
  }

  private take(atEnd: boolean): RawSseEvent[] {
    const out: RawSseEvent[] = [];
    for (let end = this.eventEnd(atEnd); end >= 0; end = this.eventEnd(atEnd)) {
      const raw = this.buf.subarray(0, end);
      this.buf = this.buf.subarray(end);
      this.scanned = 0;
      const [event] = this.parser.push(raw); // a whole event: one at most
      out.push({ raw, ...(event?.type !== undefined ? { type: event.type } : {}), ...(event ? { data: decodeUtf8(event.data) } : {}) });
    }
    if (this.buf.length > this.maxEventBytes) throw new SseError('frame_too_large', `an event longer than ${this.maxEventBytes} bytes`);
    return out;
  }

  /** The offset just past the blank line ending the first event, or -1. A CR at the very end may be half a CRLF: wait. */
  private eventEnd(atEnd: boolean): number {
    const b = this.buf;
    let i = this.scanned;
    let lineStart = true;
    while (i < b.length) {
      const c = b[i];
      if (c !== CR && c !== LF) {
        lineStart = false;
        i++;
        continue;
      }
      if (c === CR) {
        if (i + 1 >= b.length && !atEnd) return -1;
        if (i + 1 < b.length && b[i + 1] === LF) i++;
      }
      i++;
      if (lineStart) return i;
      lineStart = true;
      this.scanned = i;
    }
    return -1;
  }
}

/** One event as bytes: `event:` when given, then the data, one `data:` line per line. */
export function encodeEvent(data: string, type?: string): Uint8Array {
  const lines = data.split(/\r\n|\r|\n/).map((l) => `data: ${l}\n`);
  return Buffer.from(`${type !== undefined ? `event: ${type}\n` : ''}${lines.join('')}\n`);
}
