// The agent's side of the bridge: stdout lines that must be strict frames
// `{"operation": string, "arguments": object}` and nothing else. Guards against: an agent naming
// tools, call ids, labels or ceilings itself; parser differentials (the project's strict parser);
// output floods and huge lines (bounds counted on bytes, before decoding).
import { parseStrict, WireError } from '../wire/strict-parse.js';
import { isJsonObject, type JsonObject } from '../core/json.js';
import type { WireRefusal } from '../core/refusal.js';

export const MAX_FRAME_BYTES = 64 * 1024;
export const MAX_STREAM_BYTES = 1024 * 1024;

/** Why a session stopped. Fixed codes: the only diagnostics the bridge ever writes. */
export type StopReason =
  | 'frame_too_large'
  | 'stdout_limit'
  | 'stderr_limit'
  | 'malformed_frame'
  | 'frame_keys'
  | 'max_calls'
  | 'timeout'
  | 'gateway_error'
  | 'watchdog_lost'
  | 'attach_lost'
  | 'stream_protocol'
  | 'container_restarted'
  | 'container_removed'
  | 'admission_changed'
  | 'interrupted'
  | 'internal_error';

export const STOP_TEXT: Record<StopReason, string> = {
  frame_too_large: 'agent frame larger than 64 KiB',
  stdout_limit: 'agent stdout above 1 MiB',
  stderr_limit: 'agent stderr above 1 MiB',
  malformed_frame: 'agent frame is not a strict JSON object',
  frame_keys: 'agent frame keys are not exactly operation and arguments',
  max_calls: 'more calls than --max-calls',
  timeout: 'session timeout',
  gateway_error: 'the gate or the upstream could not answer',
  watchdog_lost: 'the watchdog stopped acknowledging',
  attach_lost: 'the attach stream ended while the container ran',
  stream_protocol: 'invalid attach stream',
  container_restarted: 'the container was restarted',
  container_removed: 'the container was removed under the bridge (the watchdog acted)',
  admission_changed: 'the container configuration changed after create',
  interrupted: 'the bridge was interrupted',
  internal_error: 'internal error',
};

export class StopError extends Error {
  constructor(
    readonly reason: StopReason,
    /** A frame the gate refuses: its wire refusal code, and the line when it was read whole. */
    readonly frame?: { code: WireRefusal; line: Buffer },
  ) {
    super(STOP_TEXT[reason]);
  }
}

/** Splits a byte stream into lines with a per-line and a total bound. Throws StopError. */
export class BoundedLines {
  private parts: Buffer[] = [];
  private partBytes = 0;
  total = 0;

  constructor(
    private readonly maxLine: number,
    private readonly maxTotal: number,
    private readonly overTotal: StopReason,
  ) {}

  push(chunk: Buffer): Buffer[] {
    this.total += chunk.length;
    if (this.total > this.maxTotal) throw new StopError(this.overTotal);
    const lines: Buffer[] = [];
    let start = 0;
    for (;;) {
      const nl = chunk.indexOf(0x0a, start);
      const end = nl === -1 ? chunk.length : nl;
      // The line is not kept: like the stdio door, its refusal records no line digest of value.
      if (this.partBytes + (end - start) > this.maxLine) throw new StopError('frame_too_large', { code: 'frame_too_large', line: Buffer.alloc(0) });
      if (end > start) {
        this.parts.push(chunk.subarray(start, end));
        this.partBytes += end - start;
      }
      if (nl === -1) break;
      lines.push(Buffer.concat(this.parts));
      this.parts = [];
      this.partBytes = 0;
      start = nl + 1;
    }
    return lines;
  }

  /** Bytes after the last newline (an unterminated frame at EOF). */
  get pending(): number {
    return this.partBytes;
  }

  /** Those bytes (at most one frame's bound). */
  rest(): Buffer {
    return Buffer.concat(this.parts);
  }
}

export interface Frame {
  operation: string;
  arguments: JsonObject;
}

const decoder = new TextDecoder('utf-8', { fatal: true });

/** A strict frame, or a StopError naming the wire refusal the gate records for the line. */
export function parseFrame(line: Buffer): Frame {
  let value;
  try {
    value = parseStrict(decoder.decode(line));
  } catch (e) {
    throw new StopError('malformed_frame', { code: e instanceof WireError ? e.code : 'malformed_json', line });
  }
  if (!isJsonObject(value)) throw new StopError('malformed_frame', { code: 'invalid_request', line });
  const keys = Object.keys(value);
  const extra = new StopError('frame_keys', { code: 'invalid_request', line });
  if (keys.length !== 2 || !keys.includes('operation') || !keys.includes('arguments')) throw extra;
  const { operation, arguments: args } = value;
  if (typeof operation !== 'string' || !isJsonObject(args)) throw extra;
  return { operation, arguments: args };
}
