// Facts for calling one check directly, with the real stores.
import type { Facts } from '../../src/gate/facts.js';
import type { ToolDecl } from '../../src/contract/manifest-types.js';
import type { GateServices } from '../../src/gate/services.js';
import { fingerprintOf } from '../../src/core/call.js';
import { newAnnotations } from '../../src/gate/decide.js';
import type { JsonObject } from '../../src/core/json.js';

export const SEND: ToolDecl = {
  effect: 'write',
  approval: 'required',
  operation_id: 'idempotency_key',
  arguments: { to: { type: 'string' }, body: { type: 'string' }, idempotency_key: { type: 'string' } },
};
export const READ: ToolDecl = { effect: 'read', arguments: { q: { type: 'string' } } };

export function factsFor(opts: {
  tool?: ToolDecl;
  name?: string;
  args?: JsonObject;
  meta?: JsonObject;
  taskId?: string | null;
  services: Partial<GateServices>;
  now?: number;
}): Facts {
  const name = opts.name ?? 'send_email';
  const args = opts.args ?? { to: 'a@example.com', body: 'hello' };
  const taskId = opts.taskId === undefined ? 'T-1' : opts.taskId;
  const call = { tool: name, arguments: args, meta: opts.meta ?? {}, taskId };
  return {
    manifest: undefined as never,
    context: undefined as never,
    tool: opts.tool ?? SEND,
    call,
    fingerprint: fingerprintOf(name, args, taskId),
    sessionLabel: 'public',
    now: opts.now ?? Date.now(),
    services: { agent: 'agent', mode: 'enforce', ...opts.services } as GateServices,
    notes: newAnnotations(),
  };
}

/** What the gate does with an allowed decision: run its effects (in a transaction). */
export function applyAllow(f: Facts) {
  for (const e of f.notes.onAllow) e();
}
