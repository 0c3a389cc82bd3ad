// A Call is what a door hands the gate: one tools/call, already strictly parsed.
// Its fingerprint (product.md section 5) binds approvals and operations to this exact call.
import type { JsonObject } from './json.js';
import { digestJson, type Digest } from './digest.js';

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
