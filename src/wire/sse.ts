// Server-sent events (WHATWG HTML, "event stream interpretation"), read one event at a time
// with the event's exact bytes kept: a door that passes an event on unchanged writes those
// bytes, never a re-encoding of what it understood. Guards against a stream built to exhaust
// the reader (an event without end): an event longer than `maxEventBytes` is an error.
import { WireError } from './strict-parse.js';
import { decodeUtf8 } from './utf8.js';

export interface SseEvent {
  /** The event's bytes, its closing blank line included. */
  raw: Uint8Array;
  /** The `event:` field; undefined when absent (the default type, `message`). */
  event?: string;
  /** The `data:` lines joined by LF; undefined when the event had none (a comment, a retry). */
  data?: string;
}

const LF = 0x0a;
const CR = 0x0d;

export class SseReader {
  private buf: Uint8Array = new Uint8Array(0);
  /** Where the scan for the end of the current event resumes. */
  private scanned = 0;

  constructor(private readonly maxEventBytes: number) {}

  /** Bytes in, the events they complete out. Throws WireError on an event too long or not UTF-8. */
  push(chunk: Uint8Array): SseEvent[] {
    this.buf = this.buf.length === 0 ? chunk : concat(this.buf, chunk);
    const out: SseEvent[] = [];
    for (;;) {
      const end = this.eventEnd();
      if (end < 0) break;
      const raw = this.buf.subarray(0, end);
      this.buf = this.buf.subarray(end);
      this.scanned = 0;
      out.push(parseEvent(raw));
    }
    if (this.buf.length > this.maxEventBytes) throw new WireError('frame_too_large', `a stream event longer than ${this.maxEventBytes} bytes`);
    return out;
  }

  /** What was left when the stream ended: bytes that never formed a whole event. */
  get pending(): number {
    return this.buf.length;
  }

  /** The offset just past the blank line ending the first event, or -1. */
  private eventEnd(): number {
    const b = this.buf;
    // A line ends at CR, LF or CRLF; an event at an empty line. A CR at the very end may be
    // the first half of a CRLF: wait for the next byte.
    let i = this.scanned; // always the start of a line
    let lineStart = true;
    while (i < b.length) {
      const c = b[i];
      if (c === CR || c === LF) {
        if (c === CR) {
          if (i + 1 >= b.length) break;
          if (b[i + 1] === LF) i++;
        }
        i++;
        if (lineStart) return i;
        lineStart = true;
        this.scanned = i;
        continue;
      }
      lineStart = false;
      i++;
    }
    return -1;
  }
}

function parseEvent(raw: Uint8Array): SseEvent {
  const text = decodeUtf8(raw);
  let event: string | undefined;
  const data: string[] = [];
  for (const line of text.split(/\r\n|\r|\n/)) {
    if (line === '' || line.startsWith(':')) continue;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'event') event = value;
    else if (field === 'data') data.push(value);
  }
  return { raw, event, data: data.length > 0 ? data.join('\n') : undefined };
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length);
  out.set(a, 0);
  out.set(b, a.length);
  return out;
}

/** One event as bytes: `event:` when given, then the data, one `data:` line per line. */
export function encodeEvent(data: string, event?: string): Uint8Array {
  const lines = data.split(/\r\n|\r|\n/).map((l) => `data: ${l}\n`);
  return new TextEncoder().encode(`${event !== undefined ? `event: ${event}\n` : ''}${lines.join('')}\n`);
}
