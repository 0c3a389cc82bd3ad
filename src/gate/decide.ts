// decide(): the pure composition of checks, in the order of architecture.md:
// contract → admission → pins → flow → policy → operations → approval. The first refusal wins.
// Checks only read; their effects (consume a receipt, begin an operation, count a call) are
// queued in notes.onAllow and applied by the gate in the decision's transaction.
import type { LoadedManifest } from '../contract/manifest.js';
import type { TaskContext } from '../contract/context.js';
import type { ToolDecl } from '../contract/manifest-types.js';
import { callDigests, type Call } from '../core/call.js';
import { checkContract, resolveTool } from './checks/contract.js';
import { checkFlow } from './checks/flow.js';
import { checkPins } from './checks/pins.js';
import { checkPolicy } from './checks/policy.js';
import type { Facts } from './facts.js';
import type { GateServices, PolicyService } from './services.js';
import type { GateSession } from './session.js';
import { PASS, type Annotations, type Verdict } from './verdict.js';
import type { Digest } from '../core/digest.js';
import { checkOperations } from './checks/operations.js';
import { checkApproval } from './checks/approval.js';
import { checkAdmission } from './checks/admission.js';

export type Check = (f: Facts) => Verdict;

/** Checks after the contract, in order. Each file under checks/ guards one thing. */
export const CHECKS: { name: string; check: Check }[] = [
  { name: 'admission', check: checkAdmission },
  { name: 'pins', check: checkPins },
  { name: 'flow', check: checkFlow },
  { name: 'policy', check: checkPolicy },
  { name: 'operations', check: checkOperations },
  { name: 'approval', check: checkApproval },
];

export interface DecideInput {
  manifest: LoadedManifest;
  policy: PolicyService;
  context: TaskContext;
  services: GateServices;
  session: GateSession;
  now: number;
}

export interface Decision {
  verdict: Verdict;
  tool?: ToolDecl;
  fingerprint: Digest;
  /** Digest of the call's arguments (its decision entry's args_digest). */
  argsDigest: Digest;
  notes: Annotations;
}

export function newAnnotations(): Annotations {
  return { fields: {}, onAllow: [], onRefuse: [], afterReply: [], afterFailure: [], notForwarded: [], notRecorded: [] };
}

export function decide(call: Call, input: DecideInput): Decision {
  const { fingerprint, argsDigest } = callDigests(call.tool, call.arguments, input.context.taskId);
  const notes = newAnnotations();
  const contract = checkContract(call, input.manifest, input.context);
  const tool = resolveTool(call, input.manifest);
  if (!contract.ok || !tool) return { verdict: contract, tool, fingerprint, argsDigest, notes };
  const facts: Facts = Object.assign({}, input, { sessionLabel: input.session.label, call, tool, fingerprint, notes }); // not a spread: see Ledger.appendInTx
  for (const { check } of CHECKS) {
    const v = check(facts);
    if (!v.ok) return { verdict: v, tool, fingerprint, argsDigest, notes };
  }
  return { verdict: PASS, tool, fingerprint, argsDigest, notes };
}
