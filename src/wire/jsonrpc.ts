// JSON-RPC 2.0 shapes, checked before anything reads a method or an id. Guards against messages
// the gate and the server would classify differently: batches (one line, many calls), a request
// that is also a response, ids that are not string or integer, extra top-level members that a
// server might act on but the gate would not look at.
import type { JsonObject, JsonValue } from '../core/json.js';
import { isJsonObject } from '../core/json.js';
import { WireError } from './strict-parse.js';

export type RpcId = string | number;
export type RpcMessage =
  | { kind: 'request'; id: RpcId; method: string; params?: JsonObject | JsonValue[]; msg: JsonObject }
  | { kind: 'notification'; method: string; params?: JsonObject | JsonValue[]; msg: JsonObject }
  | { kind: 'response'; id: RpcId | null; msg: JsonObject }; // has exactly one of result / error

const TOP_LEVEL = new Set(['jsonrpc', 'id', 'method', 'params', 'result', 'error']);

const has = (o: JsonObject, k: string): boolean => Object.prototype.hasOwnProperty.call(o, k);
const invalid = (detail: string): WireError => new WireError('invalid_request', detail);

/**
 * The longest id the gate takes on a request, in bytes of its JSON form (ADR 108). JSON-RPC and
 * MCP set no bound, but the gate holds each request's id until it is answered (and remembers
 * ids it gave up on): a host's 4 MiB ids would make --max-in-flight requests cost gigabytes.
 * An SDK's ids are integers; a UUID is 38 bytes.
 */
export const MAX_ID_BYTES = 1024;

/** The bytes of an id's JSON form. */
export const idBytes = (id: RpcId): number => (typeof id === 'number' ? String(id).length : Buffer.byteLength(JSON.stringify(id)));

/** A usable id: a string or an integer (the strict parser already bounds it to ±(2^53−1)). */
export function isRpcId(v: unknown): v is RpcId {
  return typeof v === 'string' || (typeof v === 'number' && Number.isSafeInteger(v));
}

/**
 * Classifies one parsed message, or throws WireError: `batch_not_allowed` for an array,
 * `invalid_request` for anything that is not a single JSON-RPC 2.0 request, notification or
 * response.
 */
export function classifyRpc(v: JsonValue): RpcMessage {
  if (Array.isArray(v)) throw new WireError('batch_not_allowed', 'a JSON-RPC batch (array) is not accepted');
  if (!isJsonObject(v)) throw invalid('a JSON-RPC message must be an object');
  const msg = v;
  for (const k of Object.keys(msg)) {
    if (!TOP_LEVEL.has(k)) throw invalid('unknown top-level member');
  }
  if (msg.jsonrpc !== '2.0') throw invalid('jsonrpc must be "2.0"');

  if (has(msg, 'method')) {
    if (has(msg, 'result') || has(msg, 'error')) throw invalid('a request cannot carry result or error');
    const method = msg.method;
    if (typeof method !== 'string' || method.length === 0) throw invalid('method must be a non-empty string');
    let params: JsonObject | JsonValue[] | undefined;
    if (has(msg, 'params')) {
      const p = msg.params;
      if (!Array.isArray(p) && !isJsonObject(p)) throw invalid('params must be an object or an array');
      params = p;
    }
    if (!has(msg, 'id')) {
      return params === undefined ? { kind: 'notification', method, msg } : { kind: 'notification', method, params, msg };
    }
    const id = msg.id;
    if (!isRpcId(id)) throw invalid('id must be a string or an integer');
    return params === undefined ? { kind: 'request', id, method, msg } : { kind: 'request', id, method, params, msg };
  }

  if (has(msg, 'params')) throw invalid('params without method');
  const hasResult = has(msg, 'result');
  const hasError = has(msg, 'error');
  if (hasResult === hasError) throw invalid('a response has exactly one of result and error');
  if (!has(msg, 'id')) throw invalid('a response needs an id');
  const id = msg.id;
  if (id === null) {
    if (!hasError) throw invalid('only an error response may have a null id');
  } else if (!isRpcId(id)) {
    throw invalid('id must be a string or an integer');
  }
  if (hasError) {
    const e = msg.error;
    if (!isJsonObject(e)) throw invalid('error must be an object');
    if (typeof e.code !== 'number' || !Number.isSafeInteger(e.code)) throw invalid('error.code must be an integer');
    if (typeof e.message !== 'string') throw invalid('error.message must be a string');
  }
  return { kind: 'response', id, msg };
}
