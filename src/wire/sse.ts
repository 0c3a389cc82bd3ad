// Server-sent events (WHATWG HTML, "event stream interpretation") read strictly, byte by byte,
// for the upstream side of the HTTP door. Guards against an upstream whose stream means one
// thing to the gate and another to a lenient reader: only the four fields of the format and
// comments are accepted (a line naming any other field breaks the stream instead of being
// ignored), an `id` with NUL or a non-numeric `retry` breaks it too, and one event's data is
// bounded so a stream that never ends an event cannot grow the gate's memory. Event data stays
// bytes: the strict JSON parser judges its UTF-8 and its JSON.

export type SseFailure = 'sse_malformed' | 'frame_too_large';

export class SseError extends Error {
  constructor(
    override readonly cause: SseFailure,
    readonly detail: string,
  ) {
    super(`${cause}: ${detail}`);
  }
}

export interface SseEvent {
  /** `event:`; absent means the default type, `message`. */
  type?: string;
  /** The data lines joined with LF. */
  data: Uint8Array;
  /** The last event id in force when this event was dispatched. */
  lastEventId?: string;
}

const LF = 0x0a;
const CR = 0x0d;
const COLON = 0x3a;
const SPACE = 0x20;

export class SseParser {
  private line: Buffer[] = [];
  private lineBytes = 0;
  private data: Buffer[] = [];
  private dataBytes = 0;
  private hasData = false;
  private type: string | undefined;
  private lastEventId: string | undefined;
  private afterCR = false;
  private atStart = true;
  /** The server's reconnection time (`retry:`), when it sent one. */
  retryMs: number | undefined;
  /**
   * The last event id as of the last dispatch (the format's "last event ID string"), also set by
   * an event without data such as a priming event: what a client resumes the stream from. An id
   * line of an event the stream cut before its end does not count: that event was never read.
   */
  dispatchedId: string | undefined;

  /** `maxEventBytes` bounds one event's data and any one line. */
  constructor(private readonly maxEventBytes: number) {}

  /** The events completed by this chunk; throws SseError when the stream cannot be read. */
  push(chunk: Uint8Array): SseEvent[] {
    let buf = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    if (this.atStart && buf.length > 0) {
      // One UTF-8 BOM may open the stream (it may arrive split over chunks: held until whole).
      const held = Buffer.concat([...this.line, buf]);
      if (held.length < 3 && Buffer.from([0xef, 0xbb, 0xbf]).subarray(0, held.length).equals(held)) {
        this.line = [held];
        this.lineBytes = held.length;
        return [];
      }
      this.atStart = false;
      this.line = [];
      this.lineBytes = 0;
      buf = held[0] === 0xef && held[1] === 0xbb && held[2] === 0xbf ? held.subarray(3) : held;
    }
    const out: SseEvent[] = [];
    let start = 0;
    for (let i = 0; i < buf.length; i++) {
      const b = buf[i];
      if (b !== LF && b !== CR) continue;
      if (b === LF && this.afterCR && i === start && this.lineBytes === 0) {
        // The LF of a CRLF whose CR ended the previous line.
        this.afterCR = false;
        start = i + 1;
        continue;
      }
      this.afterCR = b === CR;
      this.take(buf.subarray(start, i));
      this.endLine(out);
      start = i + 1;
    }
    if (start < buf.length) {
      this.afterCR = false;
      this.take(buf.subarray(start));
    }
    return out;
  }

  /** The stream ended: true when an event was cut off (the format discards it). */
  end(): boolean {
    return this.lineBytes > 0 || this.hasData || this.type !== undefined;
  }

  private take(part: Buffer): void {
    if (part.length === 0) return;
    this.lineBytes += part.length;
    if (this.lineBytes + this.dataBytes > this.maxEventBytes) throw new SseError('frame_too_large', `an event longer than ${this.maxEventBytes} bytes`);
    this.line.push(part);
  }

  private endLine(out: SseEvent[]): void {
    const line = this.line.length === 1 ? this.line[0] : Buffer.concat(this.line);
    this.line = [];
    this.lineBytes = 0;
    if (line.length === 0) return this.dispatch(out);
    if (line[0] === COLON) return; // a comment (keep-alive)
    const colon = line.indexOf(COLON);
    const name = (colon < 0 ? line : line.subarray(0, colon)).toString('latin1');
    let value = colon < 0 ? Buffer.alloc(0) : line.subarray(colon + 1);
    if (value[0] === SPACE) value = value.subarray(1);
    switch (name) {
      case 'data':
        if (this.hasData) {
          this.data.push(Buffer.from([LF]));
          this.dataBytes += 1;
        }
        this.data.push(value);
        this.dataBytes += value.length;
        this.hasData = true;
        return;
      case 'event':
        this.type = utf8(value, 'event') || undefined; // empty: the default type, as the format says
        return;
      case 'id':
        if (value.includes(0)) throw new SseError('sse_malformed', 'an id field holds NUL');
        this.lastEventId = utf8(value, 'id');
        return;
      case 'retry':
        if (!/^[0-9]{1,9}$/.test(value.toString('latin1'))) throw new SseError('sse_malformed', 'a retry field that is not a number of milliseconds');
        this.retryMs = Number(value.toString('latin1'));
        return;
      default:
        throw new SseError('sse_malformed', 'a line that is neither a comment nor a data, event, id or retry field');
    }
  }

  private dispatch(out: SseEvent[]): void {
    this.dispatchedId = this.lastEventId;
    // An event whose data is empty is not dispatched (the format's rule: a priming event that
    // only carries an id); its type is forgotten.
    if (this.hasData && this.dataBytes > 0) {
      out.push({
        data: this.data.length === 1 ? this.data[0] : Buffer.concat(this.data),
        ...(this.type !== undefined ? { type: this.type } : {}),
        ...(this.lastEventId !== undefined ? { lastEventId: this.lastEventId } : {}),
      });
    }
    this.data = [];
    this.dataBytes = 0;
    this.hasData = false;
    this.type = undefined;
  }
}

function utf8(bytes: Buffer, field: string): string {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw new SseError('sse_malformed', `an ${field} field that is not UTF-8`);
  }
}
