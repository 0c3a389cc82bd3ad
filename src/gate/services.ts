// The stateful services the checks consult. Each is owned by its folder (policy/, operations/,
// approvals/, flow/); the gate wires them in and decide() only reads through these interfaces.
import type { JsonObject } from '../wire/json.js';
import type { Digest } from '../util/digest.js';
import type { FlowSession } from '../flow/session.js';

export interface Window {
  minute: number;
  hour: number;
  day: number;
}

export interface PolicyRequest {
  agent: string;
  tool: string;
  args: JsonObject;
  task: JsonObject;
  sessionLabel: string;
  calls: Window;
  callsAll: Window;
}

export interface PolicyService {
  digest: Digest;
  evaluate(req: PolicyRequest): { allow: boolean; policyIds: string[]; errors: string[] };
}

export interface RateService {
  counts(taskId: string | null, tool: string, now: number): { calls: Window; callsAll: Window };
  record(taskId: string | null, tool: string, now: number): void;
}

export interface GateServices {
  agent: string;
  mode: 'enforce' | 'shadow';
  policy: PolicyService;
  rates: RateService;
  /** The session label and fixed ceilings of this gate's session (flow/); the gate must wire it. */
  flow?: FlowSession;
}
