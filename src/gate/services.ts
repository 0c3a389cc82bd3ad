// The stateful services the checks consult, shared by every session of the gate. Each is owned
// by its folder (policy/, operations/, approvals/); the gate wires them in and decide() only
// reads through these interfaces. What belongs to one session (flow label, pins view) is in
// session.ts; the policy in force comes from rules.ts.
import type { Digest } from '../core/digest.js';
import type { Mode } from '../core/outcome.js';
import type { Operations } from '../operations/operations.js';
import type { ApprovalService } from '../approvals/service.js';
import type { CountsRead } from '../store/ports.js';

// The request shape is the policy engine's own (one definition).
export type { PolicyRequest, Windows as Window } from '../policy/engine.js';
import type { PolicyDecision, PolicyRequest, Windows as Window } from '../policy/engine.js';

export interface PolicyService {
  digest: Digest;
  /** Throws PolicyEvalError when it cannot decide. */
  evaluate(req: PolicyRequest): PolicyDecision;
  /** Which call counts the policies that can apply to `tool` read (absent: both). */
  countsRead?(tool: string): CountsRead;
}

export interface RateService {
  counts(taskId: string | null, tool: string, now: number, read?: CountsRead): { calls: Window; callsAll: Window };
  record(taskId: string | null, tool: string, now: number): void;
}

/** Admission of a confined session (confinement.md, live restriction): the operator's state. */
export interface AdmissionService {
  /** Whether a call to `tool` is admitted now, and the control revision in force. */
  admits(tool: string): { state: 'open' | 'revoked' | 'closed'; revision: number };
}

export interface GateServices {
  /** The Cedar principal and the entries' `agent`: --agent, else the task's `task.agent`, else 'agent'. */
  agent: string;
  /** No --agent: the agent is the task context's `task.agent` at each decision (product.md 4: the context is re-read when it changes). */
  agentFromTask?: boolean;
  mode: Mode;
  rates: RateService;
  /** Operations of write tools (operations/): absent → write calls refuse fail_closed. */
  operations?: Operations;
  /** Approver keys, inbox, used receipts (approvals/): absent → approval-required calls refuse fail_closed. */
  approvals?: ApprovalService;
  /** Live restriction of a confined session (confine/): absent → every declared tool is admitted. */
  admission?: AdmissionService;
}
