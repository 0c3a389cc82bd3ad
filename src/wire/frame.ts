// Newline-delimited framing for MCP's stdio transport. Guards against a peer that never sends a
// newline: a line longer than the maximum is reported once (frame_too_large) and its bytes are
// dropped until the next newline, so the framer never holds more than maxLineBytes of one line.
// With `recoverIds`, the discarded bytes still pass through a bounded-memory id scan, and a
// `tooLargeEnd` event at the line's end carries the id it read (a host can match the refusal).
import { IdScanner } from './id-scan.js';
import type { RpcId } from './jsonrpc.js';

export const DEFAULT_MAX_LINE_BYTES = 4 * 1024 * 1024;

/**
 * A blank line (empty, or only spaces, tabs and CRs) carries no message and is skipped, never
 * refused: it has no id to answer and nothing to forward, and treating `""` and `" "` alike
 * keeps one rule for both (docs/decisions, upstream strictness).
 */
export function isBlank(line: Uint8Array): boolean {
  for (const b of line) if (b !== 0x20 && b !== 0x09 && b !== 0x0d) return false;
  return true;
}

/** A complete line (without `\n` and one trailing `\r`), or the notice that a line was too large. */
export type FrameEvent =
  | { kind: 'line'; line: Buffer }
  | { kind: 'tooLarge'; tooLarge: true }
  /** With `recoverIds`: the oversize line ended; the id read from it, or null. */
  | { kind: 'tooLargeEnd'; id: RpcId | null };

export interface LineFramerOptions {
  /** Largest line accepted, in bytes, counting everything before the `\n` (a `\r` included). */
  maxLineBytes?: number;
  /** Scan oversize lines for their id and report it when they end (`tooLargeEnd`). */
  recoverIds?: boolean;
}

export class LineFramer {
  readonly maxLineBytes: number;
  private parts: Buffer[] = [];
  private size = 0;
  private discarding = false;
  private readonly recoverIds: boolean;
  private scan: IdScanner | null = null;

  constructor(opts: LineFramerOptions = {}) {
    this.maxLineBytes = opts.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES;
    this.recoverIds = opts.recoverIds ?? false;
    if (!Number.isInteger(this.maxLineBytes) || this.maxLineBytes < 1) throw new RangeError('maxLineBytes must be a positive integer');
  }

  /** Bytes of the current, unfinished line held right now (never more than maxLineBytes). */
  get bufferedBytes(): number {
    return this.size;
  }

  /** Feeds a chunk; returns the events it completes, in order. Blank lines produce nothing. */
  push(chunk: Uint8Array): FrameEvent[] {
    const buf = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    const events: FrameEvent[] = [];
    let start = 0;
    while (start <= buf.length) {
      const nl = buf.indexOf(0x0a, start);
      const end = nl < 0 ? buf.length : nl;
      if (this.discarding) {
        this.scan?.push(buf.subarray(start, end));
        if (nl >= 0) this.endDiscard(events);
      } else {
        this.append(buf, start, end, events);
        if (nl >= 0 && !this.discarding) this.emitLine(events);
        else if (nl >= 0) this.endDiscard(events); // the oversize line ended in this very segment
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
    else this.endDiscard(events);
    this.parts = [];
    this.size = 0;
    this.discarding = false;
    return events;
  }

  private append(buf: Buffer, start: number, end: number, events: FrameEvent[]): void {
    const len = end - start;
    if (len === 0) return;
    if (this.size + len > this.maxLineBytes) {
      if (this.recoverIds) {
        this.scan = new IdScanner();
        for (const p of this.parts) this.scan.push(p);
        this.scan.push(buf.subarray(start, end));
      }
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

  private endDiscard(events: FrameEvent[]): void {
    this.discarding = false;
    if (this.scan) events.push({ kind: 'tooLargeEnd', id: this.scan.result() });
    this.scan = null;
  }

  private emitLine(events: FrameEvent[]): void {
    if (this.size === 0) return;
    let line = this.parts.length === 1 ? this.parts[0]! : Buffer.concat(this.parts, this.size);
    this.parts = [];
    this.size = 0;
    if (line[line.length - 1] === 0x0d) line = line.subarray(0, line.length - 1);
    if (!isBlank(line)) events.push({ kind: 'line', line });
  }
}
