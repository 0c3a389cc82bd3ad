// What a gated call comes to, as every door, the telemetry and the CLI see it.
import type { Digest } from './digest.js';
import { isJsonObject, type JsonValue } from './json.js';
import type { RefusalCode } from './refusal.js';

export type Mode = 'enforce' | 'shadow';

/** The upstream's answer to a forwarded tools/call: exactly one of result / error. */
export interface UpstreamReply {
  result?: JsonValue;
  error?: JsonValue;
}

/** What a reply says of the call: a JSON-RPC error, `isError: true` or no result failed. */
export function outcomeOf(reply: UpstreamReply): 'succeeded' | 'failed' {
  if (reply.error !== undefined) return 'failed';
  if (reply.result === undefined) return 'failed';
  if (isJsonObject(reply.result) && reply.result.isError === true) return 'failed';
  return 'succeeded';
}

/** The `data` of a refusal's JSON-RPC error (product.md section 1). */
export interface RefusalData {
  reason: RefusalCode;
  detail: string;
  manifest_digest: Digest;
  policy_digest: Digest;
  entry: number | null;
  fingerprint?: Digest;
}

/** Why the outcome of a forwarded call cannot be known. */
export type UnknownWhy = 'timeout' | 'upstream_exit' | 'error' | 'cancelled' | 'unattributed';

export type CallOutcome =
  | { kind: 'refused'; data: RefusalData }
  | { kind: 'replayed'; result: JsonValue; entry: number }
  | { kind: 'forwarded'; reply: UpstreamReply; entry: number }
  | { kind: 'unknown'; why: UnknownWhy; entry: number; fingerprint: Digest }
  /** Allowed, then withdrawn before it reached the tool (host cancelled, gate stopping): nothing ran. */
  | { kind: 'not_forwarded'; entry: number };
