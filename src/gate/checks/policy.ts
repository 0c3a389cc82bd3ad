// The Cedar policy: what this agent may do now, in this task (rates and tiers live there).
// Guards against calls the manifest allows in general but the task does not.
import type { Facts } from '../facts.js';
import { PASS, refuse, type Verdict } from '../verdict.js';

export function checkPolicy(f: Facts): Verdict {
  const { services: s, call, context } = f;
  const { calls, callsAll } = s.rates.counts(context.taskId, call.tool, f.now);
  const r = s.policy.evaluate({
    agent: s.agent,
    tool: call.tool,
    args: call.arguments,
    task: context.task,
    sessionLabel: f.sessionLabel,
    calls,
    callsAll,
  });
  if (r.errors.length > 0) return refuse('fail_closed', 'policy evaluation error');
  f.notes.fields.policy_ids = r.policyIds;
  if (!r.allow) {
    const by = r.policyIds.length ? `denied by ${r.policyIds.join(', ')}` : 'no policy permits this call';
    return refuse('policy_denied', by);
  }
  f.notes.onAllow.push(() => s.rates.record(context.taskId, call.tool, f.now));
  return PASS;
}
