// A Call is what a door hands the gate: one tools/call, already strictly parsed.
// Its fingerprint (product.md section 5) binds approvals and operations to this exact call.
import type { JsonObject } from './json.js';
import { digestBytes, digestJson, type Digest } from './digest.js';
import { canonicalize } from './canonical.js';

export interface Call {
  tool: string;
  arguments: JsonObject;
  /** params._meta as sent by the host (approval receipt, operation id); never forwarded data. */
  meta: JsonObject;
  /** task.id from the task context at decision time, or null. */
  taskId: string | null;
}

export function fingerprintOf(tool: string, args: JsonObject, taskId: string | null): Digest {
  return digestJson({ v: 1, tool, arguments: args, task: taskId });
}

/**
 * The fingerprint and the digest of the arguments from one canonical form of the arguments
 * (they are the largest part of a call, and both digests cover them): the fingerprint's
 * object is written around it, its keys in their sorted order (arguments, task, tool, v).
 */
export function callDigests(tool: string, args: JsonObject, taskId: string | null): { fingerprint: Digest; argsDigest: Digest } {
  const a = canonicalize(args);
  return { fingerprint: digestBytes(`{"arguments":${a},"task":${canonicalize(taskId)},"tool":${canonicalize(tool)},"v":1}`), argsDigest: digestBytes(a) };
}
