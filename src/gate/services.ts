// The stateful services the checks consult. Each is owned by its folder (policy/, operations/,
// approvals/, flow/); the gate wires them in and decide() only reads through these interfaces.
import type { JsonValue } from '../core/json.js';
import type { EntryFields } from '../ledger/entry.js';
import type { Digest } from '../core/digest.js';
import type { Mode } from '../core/outcome.js';
import type { FlowSession } from '../flow/session.js';
import type { Operations } from '../operations/operations.js';
import type { ApprovalService } from '../approvals/service.js';

// The request shape is the policy engine's own (one definition).
export type { PolicyRequest, Windows as Window } from '../policy/engine.js';
import type { PolicyDecision, PolicyRequest, Windows as Window } from '../policy/engine.js';

export interface PolicyService {
  digest: Digest;
  /** Throws PolicyEvalError when it cannot decide. */
  evaluate(req: PolicyRequest): PolicyDecision;
}

export interface RateService {
  counts(taskId: string | null, tool: string, now: number): { calls: Window; callsAll: Window };
  record(taskId: string | null, tool: string, now: number): void;
}

export interface PinService {
  status(tool: string): { pinned: string | null; changed: boolean };
  /** A tools/list result: the declared tools' definition digests, noted in memory at once. */
  seeList(result: JsonValue): Map<string, string>;
  /** Persist what a list showed, inside a transaction; returns ledger facts. */
  recordList(seen: Map<string, string>, now: number): EntryFields[];
}

/** Admission of a confined session (confinement.md, live restriction): the operator's state. */
export interface AdmissionService {
  /** Whether a call to `tool` is admitted now, and the control revision in force. */
  admits(tool: string): { state: 'open' | 'revoked' | 'closed'; revision: number };
}

export interface GateServices {
  agent: string;
  mode: Mode;
  policy: PolicyService;
  rates: RateService;
  /** The session label and fixed ceilings of this gate's session (flow/); the gate must wire it. */
  flow?: FlowSession;
  /** Operations of write tools (operations/): absent → write calls refuse fail_closed. */
  operations?: Operations;
  /** Approver keys, inbox, used receipts (approvals/): absent → approval-required calls refuse fail_closed. */
  approvals?: ApprovalService;
  /** Tool-definition pins (pins/): absent → no pin check. */
  pins?: PinService;
  /** Live restriction of a confined session (confine/): absent → every declared tool is admitted. */
  admission?: AdmissionService;
}
