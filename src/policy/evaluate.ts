// One Cedar evaluation against a preparsed policy set. Guards against a rule that errors at
// run time and is therefore skipped by Cedar (a skipped forbid would let the call through):
// anything short of a decision without errors throws PolicyEvalError (→ fail_closed), whose
// message names policy ids only; Cedar's own messages, which can quote values, stay in
// `cedarErrors` for `policy explain`.
import * as cedar from '@cedar-policy/cedar-wasm/nodejs';
import { ACTION_ID } from './schema.js';
import type { CedarValue } from './values.js';
import { PolicyEvalError } from './problems.js';

export interface CedarEntity {
  uid: { type: string; id: string };
  attrs: Record<string, CedarValue>;
  parents: never[];
}

export interface CedarRequest {
  agent: string;
  tool: string;
  context: Record<string, CedarValue>;
  entities: CedarEntity[];
}

export interface CedarAnswer {
  allow: boolean;
  /** Satisfied permits for an allow, satisfied forbids for a deny; none when no permit matched. */
  policyIds: string[];
}

let preparsed = 0;

/** Preparse a validated policy set once; returns the id evaluations refer to. */
export function preparse(staticPolicies: Record<string, string>): { id: string } | { errors: cedar.DetailedError[] } {
  const id = `cloakpipe-policy-${++preparsed}`;
  const r = cedar.preparsePolicySet(id, { staticPolicies });
  return r.type === 'failure' ? { errors: r.errors } : { id };
}

export function authorize(policySetId: string, req: CedarRequest): CedarAnswer {
  let answer: cedar.AuthorizationAnswer;
  try {
    answer = cedar.statefulIsAuthorized({
      principal: { type: 'Agent', id: req.agent },
      action: { type: 'Action', id: ACTION_ID },
      resource: { type: 'Tool', id: req.tool },
      context: req.context as cedar.Context,
      preparsedPolicySetId: policySetId,
      entities: req.entities as cedar.EntityJson[],
    });
  } catch {
    throw new PolicyEvalError('policy evaluation failed inside Cedar');
  }
  if (answer.type === 'failure') {
    throw new PolicyEvalError('policy evaluation failed: Cedar could not read the request', [], answer.errors.map((e) => e.message));
  }
  const { decision, diagnostics } = answer.response;
  if (diagnostics.errors.length) {
    const ids = [...new Set(diagnostics.errors.map((e) => e.policyId))].sort();
    throw new PolicyEvalError(
      `policy evaluation error in ${ids.map((i) => JSON.stringify(i)).join(', ')}`,
      ids,
      diagnostics.errors.map((e) => `${e.policyId}: ${e.error.message}`),
    );
  }
  return { allow: decision === 'allow', policyIds: [...diagnostics.reason].sort() };
}
