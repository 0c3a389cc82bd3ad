// Newline-delimited framing for MCP's stdio transport. Guards against a peer that never sends a
// newline: a line longer than the maximum is reported once (frame_too_large) and its bytes are
// dropped until the next newline, so the framer never holds more than maxLineBytes of one line.
// With `recoverIds`, the discarded bytes still pass through a bounded-memory id scan and a
// running SHA-256, and a `tooLargeEnd` event at the line's end carries the id it read (a host
// can match the refusal) and the digest of the whole line (its record names what was refused).
import { createHash, type Hash } from 'node:crypto';
import { IdScanner } from './id-scan.js';
import type { Digest } from '../core/digest.js';
import type { RpcId } from './jsonrpc.js';

export const DEFAULT_MAX_LINE_BYTES = 4 * 1024 * 1024;
const CR = Buffer.from([0x0d]);

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
  /** With `recoverIds`: the oversize line ended; the id read from it, or null, and the digest
   *  of its bytes as a complete line's would be (without `\n` and one trailing `\r`). */
  | { kind: 'tooLargeEnd'; id: RpcId | null; digest: Digest }
  /** With `recoverIds`: the oversize line is a response to this id, known as soon as its top
   *  level said so (before its end when the id and the result come first); at most once a line. */
  | { kind: 'tooLargeAnswer'; id: RpcId };

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
  private hash: Hash | null = null;
  /** The discarded line's last byte so far was `\r`, not yet hashed: it may end the line. */
  private heldCR = false;
  /** The oversize line's answered id was reported. */
  private answerTold = false;

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
        this.discarded(buf.subarray(start, end), events);
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
        this.hash = createHash('sha256');
        this.heldCR = false;
        this.answerTold = false;
        for (const p of this.parts) this.discarded(p, events);
        this.discarded(buf.subarray(start, end), events);
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

  /** Bytes of an oversize line: scanned for its id and hashed as they pass, never held. */
  private discarded(bytes: Buffer, events: FrameEvent[]): void {
    if (!this.scan || !this.hash || bytes.length === 0) return;
    this.scan.push(bytes);
    this.tellAnswer(events);
    if (this.heldCR) this.hash.update(CR);
    this.heldCR = bytes[bytes.length - 1] === 0x0d;
    this.hash.update(this.heldCR ? bytes.subarray(0, bytes.length - 1) : bytes);
  }

  /** A reader waiting for this answer need not wait for the line's end, which may never come. */
  private tellAnswer(events: FrameEvent[]): void {
    const id = this.answerTold ? null : this.scan!.answered();
    if (id === null) return;
    this.answerTold = true;
    events.push({ kind: 'tooLargeAnswer', id });
  }

  private endDiscard(events: FrameEvent[]): void {
    this.discarding = false;
    if (this.scan) this.tellAnswer(events);
    if (this.scan && this.hash) events.push({ kind: 'tooLargeEnd', id: this.scan.result(), digest: `sha256:${this.hash.digest('hex')}` });
    this.scan = null;
    this.hash = null;
    this.heldCR = false;
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
