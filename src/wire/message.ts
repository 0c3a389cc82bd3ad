// One line in, one classified message out; one message in, the bytes the gate forwards out.
// The gate never forwards the raw line: what reaches a server is the RFC 8785 form of the value
// the gate checked, so the server cannot read anything the gate did not.
import { canonicalize } from '../core/canonical.js';
import type { JsonObject } from '../core/json.js';
import { isJsonObject } from '../core/json.js';
import { classifyRpc, isRpcId, type RpcId, type RpcMessage } from './jsonrpc.js';
import { parseStrict, WireError } from './strict-parse.js';
import { decodeUtf8 } from './utf8.js';
import { DEFAULT_MAX_LINE_BYTES } from './frame.js';

export interface DecodeOptions {
  maxDepth?: number; // default 64
  maxLineBytes?: number; // default 4 MiB; a longer line refuses frame_too_large
}

/**
 * UTF-8 → strict JSON → JSON-RPC shape. Throws WireError with one of the wire refusal codes.
 */
export function decodeLine(line: Uint8Array, opts: DecodeOptions = {}): RpcMessage {
  const max = opts.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES;
  if (line.length > max) throw new WireError('frame_too_large', `line longer than ${max} bytes`);
  const text = decodeUtf8(line);
  const value = parseStrict(text, { maxDepth: opts.maxDepth });
  return classifyRpc(value);
}

/**
 * The id to answer a refused line with: the id only when the line parses strictly as an object
 * whose `id` is a string or an integer; otherwise null (an id the gate cannot read for sure is
 * not one to echo back).
 */
export function readableId(line: Uint8Array, opts: DecodeOptions = {}): RpcId | null {
  try {
    const max = opts.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES;
    if (line.length > max) return null;
    const v = parseStrict(decodeUtf8(line), { maxDepth: opts.maxDepth });
    if (!isJsonObject(v) || !Object.prototype.hasOwnProperty.call(v, 'id')) return null;
    return isRpcId(v.id) ? v.id : null;
  } catch (e) {
    if (e instanceof WireError) return null;
    throw e;
  }
}

/** The line the gate writes: the RFC 8785 form of the message and a newline. */
export function encodeMessage(msg: JsonObject): string {
  return canonicalize(msg) + '\n';
}

export { WireError };
export type { RpcId, RpcMessage };
