// What the bridge needs from the gate: one decision per agent request, forwarded only when
// allowed. The real gate (src/gate) sits behind `openConfineGate`; tests may put a stand-in
// behind the same interface. Outcomes carry refusal codes only, never argument values.
import type { JsonObject, JsonValue } from '../core/json.js';
import type { UpstreamReply } from '../core/outcome.js';
import { openGate } from '../gate/open.js';

export type { UpstreamReply };

export type BridgeOutcome =
  | { kind: 'allowed'; result: JsonValue }
  | { kind: 'refused'; reason: string }
  /** The gate or the upstream could not give an answer: the session stops. */
  | { kind: 'gateway_error' };

export interface ConfineGate {
  decide(tool: string, args: JsonObject, forward: () => Promise<UpstreamReply>): Promise<BridgeOutcome>;
  close(reason: string): Promise<void>;
}

export interface ConfineGateConfig {
  home?: string;
  manifestPath: string;
  policyPath: string;
  contextPath: string;
  agent?: string;
  callTimeoutMs: number;
}

/** A fresh gate session (enforce mode: confinement has no shadow mode) over the real gate. */
export async function openConfineGate(cfg: ConfineGateConfig): Promise<ConfineGate> {
  const opened = await openGate({ ...cfg, mode: 'enforce', approverKeys: [] });
  return {
    async decide(tool, args, forward) {
      const out = await opened.gate.handleCall({ tool, arguments: args, meta: {} }, forward);
      switch (out.kind) {
        case 'refused':
          return { kind: 'refused', reason: out.data.reason };
        case 'replayed':
          return { kind: 'allowed', result: out.result };
        case 'forwarded':
          return { kind: 'allowed', result: out.reply.error !== undefined ? { error: out.reply.error } : (out.reply.result ?? null) };
        default:
          return { kind: 'gateway_error' };
      }
    },
    close: (reason) => opened.close(reason),
  };
}
