// Facts for calling one check directly, with the real stores.
import type { Facts } from '../../src/gate/facts.js';
import type { ToolDecl } from '../../src/contract/manifest-types.js';
import type { GateServices } from '../../src/gate/services.js';
import type { SessionScope } from '../../src/gate/session.js';
import { fingerprintOf } from '../../src/core/call.js';
import { newAnnotations } from '../../src/gate/decide.js';
import type { JsonObject } from '../../src/core/json.js';
import type { UnknownWhy, UpstreamReply } from '../../src/core/outcome.js';

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
  /** The session's scope (the LLM door's: the agent runs the tool). */
  scope?: SessionScope;
}): Facts {
  const name = opts.name ?? 'send_email';
  const args = opts.args ?? { to: 'a@example.com', body: 'hello' };
  const taskId = opts.taskId === undefined ? 'T-1' : opts.taskId;
  const call = { tool: name, arguments: args, meta: opts.meta ?? {}, taskId };
  return {
    manifest: undefined as never,
    policy: undefined as never,
    session: { scope: opts.scope ?? {} } as never,
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

/** What the gate does with the upstream's answer: compute every after-reply, then apply them. */
export function applyReply(f: Facts, reply: UpstreamReply, now = Date.now()) {
  for (const a of f.notes.afterReply.map((r) => r(reply, now))) a.effect?.();
}

/** What the gate does when the outcome is unknown. */
export function applyFailure(f: Facts, why: UnknownWhy, now = Date.now()) {
  for (const r of f.notes.afterFailure) r(why, now);
}

/** What the gate does with an allowed decision: run its effects (in a transaction). */
export function applyAllow(f: Facts) {
  for (const e of f.notes.onAllow) e();
}
