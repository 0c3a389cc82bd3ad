// Which operation a write call belongs to (product.md section 5): the manifest's `operation_id`
// argument, else params._meta["cloakpipe/operation_id"], else the call's fingerprint. Bounded,
// because the id is stored and used as a key. Ids can be argument values, so outside the
// operations database (ledger, logs, refusals) an operation appears only as its digest.
import type { Call } from '../core/call.js';
import type { ToolDecl } from '../contract/manifest-types.js';
import { digestBytes, type Digest } from '../core/digest.js';

export const META_OPERATION_ID = 'cloakpipe/operation_id';
export const MAX_OPERATION_ID = 256;

export type OperationIdSource = 'argument' | 'meta' | 'fingerprint';

export type OperationIdResult = { ok: true; id: string; source: OperationIdSource } | { ok: false; detail: string };

function bounded(v: unknown): string | null {
  if (typeof v === 'number' && Number.isSafeInteger(v)) return String(v);
  if (typeof v !== 'string' || v.length === 0 || v.length > MAX_OPERATION_ID) return null;
  return v;
}

export function operationIdOf(call: Call, tool: ToolDecl, fingerprint: Digest): OperationIdResult {
  const arg = tool.operation_id;
  if (arg && Object.prototype.hasOwnProperty.call(call.arguments, arg)) {
    const id = bounded(call.arguments[arg]);
    if (id === null)
      return { ok: false, detail: `argument "${arg}" carries the operation id: a string of 1 to ${MAX_OPERATION_ID} characters or an integer` };
    return { ok: true, id, source: 'argument' };
  }
  if (Object.prototype.hasOwnProperty.call(call.meta, META_OPERATION_ID)) {
    const id = bounded(call.meta[META_OPERATION_ID]);
    if (id === null)
      return { ok: false, detail: `params._meta["${META_OPERATION_ID}"] must be a string of 1 to ${MAX_OPERATION_ID} characters or an integer` };
    return { ok: true, id, source: 'meta' };
  }
  return { ok: true, id: fingerprint, source: 'fingerprint' };
}

/** How an operation appears in the ledger and anywhere outside the operations database. */
export function operationDigest(id: string): Digest {
  return digestBytes(id);
}
