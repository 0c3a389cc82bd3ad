// One session of the gate: what the agent behind one MCP session has seen. It holds the flow
// label (flow/session.ts) and the pins view (what this session's server showed of its tool
// definitions, pins/session.ts). A gate serves any number of sessions (the stdio door has one,
// the HTTP door one per MCP session); every call names its session, so one session's label
// never lowers or raises another's.
import type { ToolDecl } from '../contract/manifest-types.js';
import type { JsonValue } from '../core/json.js';
import type { UpstreamReply } from '../core/outcome.js';
import type { EntryFields } from '../ledger/entry.js';
import type { LabelFields } from '../core/entries.js';
import type { FlowSession } from '../flow/session.js';
import { flowAfterReply, flowServerOutput, flowUnreadOutput, flowUnreadReply } from '../flow/evidence.js';
import type { PinSession } from '../pins/session.js';
import type { AfterReply } from './verdict.js';
import type { ContextSource } from '../contract/context.js';
import type { Digest } from '../core/digest.js';

/** What a door knows of one of its sessions (the HTTP door: per MCP session); absent parts are the gate's own. */
export interface SessionScope {
  /** This session's task context (`--context-dir` + `Cloakpipe-Task`). */
  context?: ContextSource;
  /** The agent that opened it (a bearer token's agent id): the Cedar principal and the entries' `agent`. */
  agent?: string;
  /** A digest of the session id, on every decision entry of the session. */
  digest?: Digest;
  /** `agent`: the agent runs the tools itself (the LLM door); the gate never sees an execution. */
  execution?: 'agent';
}

export class GateSession {
  constructor(
    readonly flow: FlowSession,
    /** Absent: no pin check (a gate opened without a pin store). */
    readonly pins: PinSession | null,
    readonly scope: SessionScope = {},
  ) {}

  /** The session label in force. */
  get label(): string {
    return this.flow.label;
  }

  /**
   * What a reply (or a replayed result) to a call of `toolName` does to this session, as an
   * after-reply effect: the label rises in memory when the effect is computed, before the
   * host can see the reply; its entry is appended with the call's result entry.
   */
  replyEffect(toolName: string, tool: ToolDecl | undefined): (reply: UpstreamReply) => AfterReply {
    return (reply) => {
      const label = flowAfterReply(this.flow, toolName, tool, reply);
      return { entries: label ? [this.tied(label)] : [] };
    };
  }

  /** A reply to a call of `toolName` that could not be worked out: label entries, as for the most sensitive output (ADR 102). */
  unreadReply(toolName: string, reply: UpstreamReply): EntryFields[] {
    const label = flowUnreadReply(this.flow, toolName, reply);
    return label ? [this.tied(label)] : [];
  }

  /** Server output outside a gated call (resources/read, notifications, …): label entries. */
  serverOutput(output: JsonValue): EntryFields[] {
    const label = flowServerOutput(this.flow, output);
    return label ? [this.tied(label)] : [];
  }

  /** Output whose content the gate cannot read (the LLM door: given by reference): label entries. */
  unreadOutput(output: JsonValue): EntryFields[] {
    const label = flowUnreadOutput(this.flow, output);
    return label ? [this.tied(label)] : [];
  }

  /** A label entry names the door session it rose in: a gate serves many, each with its own label. */
  private tied(label: LabelFields): LabelFields {
    if (this.scope.digest === undefined) return label;
    return { ...label, session: this.scope.digest, ...(this.scope.agent !== undefined ? { agent: this.scope.agent } : {}) };
  }
}
