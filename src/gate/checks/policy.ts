// The Cedar policy: what this agent may do now, in this task (rates and tiers live there).
// Guards against calls the manifest allows in general but the task does not. An evaluation
// that cannot decide (a Cedar error, a task value Cedar cannot hold, a task context whose shape the
// policy no longer validates against) refuses `fail_closed`: Cedar skips a policy that errors,
// and a skipped forbid would let the call through. Details name policy ids, never values.
import type { Facts } from '../facts.js';
import { PolicyEvalError, type PolicyDecision } from '../../policy/engine.js';
import { PASS, refuse, type Verdict } from '../verdict.js';

export function checkPolicy(f: Facts): Verdict {
  const { services: s, call, context } = f;
  // Only the counts a policy that can apply reads: the others never reach Cedar.
  const { calls, callsAll } = s.rates.counts(context.taskId, call.tool, f.now, f.policy.countsRead?.(call.tool));
  let r: PolicyDecision;
  try {
    r = f.policy.evaluate({
      agent: s.agent,
      tool: call.tool,
      args: call.arguments,
      task: context.task,
      sessionLabel: f.sessionLabel,
      calls,
      callsAll,
    });
  } catch (e) {
    if (!(e instanceof PolicyEvalError)) throw e; // the gate refuses fail_closed too, generically
    // The engine's messages name policy ids, paths and reasons; Cedar's own (which quote
    // values) stay in e.cedarErrors and go nowhere from here.
    f.notes.fields.policy_ids = e.policyIds;
    return refuse('fail_closed', e.message);
  }
  f.notes.fields.policy_ids = r.policyIds;
  // Arguments Cedar cannot hold were left out of context.args (declared names, never values).
  if (r.omitted.length > 0) f.notes.fields.policy_omitted = r.omitted;
  if (!r.allow) {
    const by = r.policyIds.length ? `denied by ${r.policyIds.join(', ')}` : 'no policy permits this call';
    return refuse('policy_denied', by);
  }
  f.notes.onAllow.push(() => s.rates.record(context.taskId, call.tool, f.now));
  return PASS;
}
