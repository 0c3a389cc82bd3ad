// What the bridge needs from the gate: its relay face (one decision per agent request, made in
// the relay, forwarded only when allowed), and the session's live restriction. Both go through the real gate (src/gate): a
// call is decided by the same checks as under mcp-proxy, admission included (the restriction
// state is a service the admission check reads), so every refusal is a ledger entry with its
// RefusalCode; a control update is an operator entry. Outcomes carry codes, never values.
import { isJsonObject, type JsonObject, type JsonValue } from '../core/json.js';
import type { UpstreamReply } from '../core/outcome.js';
import type { RefusalCode, WireRefusal } from '../core/refusal.js';
import { digestBytes } from '../core/digest.js';
import { openGate } from '../gate/open.js';
import { Restrictions, type ControlReply } from './restrictions.js';
import type { RelayGate } from '../doors/relay.js';
import type { CallOutcome } from '../core/outcome.js';

export type { UpstreamReply };

export type BridgeOutcome =
  | { kind: 'allowed'; result: JsonValue }
  | { kind: 'refused'; reason: RefusalCode }
  /** The gate or the upstream could not give an answer: the session stops. */
  | { kind: 'gateway_error' };

export interface ConfineGate {
  /** The gate as the session's relay sees it: every call is decided there (confine/upstream.ts). */
  relayGate: RelayGate;
  /** Record a frame that stopped the session (never forwarded): its wire code, the line's digest. */
  refuseFrame(code: WireRefusal, line: Uint8Array): Promise<void>;
  /** Apply one control-socket line to the session's restriction, and record it. */
  control(line: string): Promise<ControlReply>;
  close(reason: string): Promise<void>;
}

export interface ConfineGateConfig {
  home?: string;
  manifestPath: string;
  policyPath: string;
  contextPath: string;
  agent?: string;
  callTimeoutMs: number;
  /** The tools the operator approved at start (the alias file's targets). */
  approvedTools: Iterable<string>;
  /** Public keys whose receipts approve `approval: required` calls (the home's inbox). */
  approverKeys?: string[];
}

/** A fresh gate session (enforce mode: confinement has no shadow mode) over the real gate. */
export async function openConfineGate(cfg: ConfineGateConfig): Promise<ConfineGate> {
  const restrictions = new Restrictions(cfg.approvedTools);
  const opened = await openGate({
    home: cfg.home,
    manifestPath: cfg.manifestPath,
    policyPath: cfg.policyPath,
    contextPath: cfg.contextPath,
    agent: cfg.agent,
    callTimeoutMs: cfg.callTimeoutMs,
    mode: 'enforce',
    approverKeys: cfg.approverKeys ?? [],
    admission: restrictions,
  });
  return {
    relayGate: opened.gate,
    async refuseFrame(code, line) {
      await opened.gate.refuseWire(code, 'the agent sent a frame the bridge does not accept: the session stops', line);
    },
    async control(line) {
      let reply = restrictions.apply(line);
      try {
        // The line is the operator's text: only its digest is kept; the state in force is ours.
        await opened.gate.record({
          kind: 'operator',
          action: 'restrict',
          accepted: reply.ok,
          admission: restrictions.closed ? 'closed' : 'open',
          revision: restrictions.revision,
          tools: restrictions.tools(),
          line_digest: digestBytes(Buffer.from(line, 'utf8')),
        });
      } catch {
        // An update the ledger does not show must not change what passes unseen: fail closed.
        restrictions.close();
        reply = { ok: false, closed: true };
      }
      return reply;
    },
    close: (reason) => opened.close(reason),
  };
}

/** What the agent is told of the gate's outcome: codes, and the tool's answer when it ran. */
export function bridgeOutcome(out: CallOutcome): BridgeOutcome {
  switch (out.kind) {
    case 'refused':
      return { kind: 'refused', reason: out.data.reason };
    case 'replayed':
      return { kind: 'allowed', result: out.result };
    case 'forwarded':
      // The server's own error text is not passed on: it may repeat the arguments.
      if (out.reply.error === undefined) return { kind: 'allowed', result: out.reply.result ?? null };
      return { kind: 'allowed', result: { error: { code: isJsonObject(out.reply.error) && typeof out.reply.error.code === 'number' ? out.reply.error.code : -32603, message: 'upstream error' } } };
    default:
      return { kind: 'gateway_error' };
  }
}
