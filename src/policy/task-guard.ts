// The policy bound to the task context in force. Guards against a rule that stops meaning what
// it says when the orchestrator rewrites the task context file: the policy was validated at
// start-up against the start-up task's shape, and a later task without `tier`, or with `tier`
// as a number, would make a rule error or compare unequal. Each time the gate evaluates with a
// task object it has not seen (ContextSource hands out the same object until the file changes,
// so this runs once per reload), the policy is validated again against the new shape
// (`engine.adoptTask`). On drift every call fails closed, naming the policies, until the task
// context has a shape the policy validates against again.
import type { JsonObject } from '../core/json.js';
import { formatProblem, PolicyEvalError, type PolicyDecision, type PolicyEngine, type PolicyProblem, type PolicyRequest } from './engine.js';

export class TaskBoundPolicy {
  private bound: JsonObject;
  private drift: PolicyEvalError | null = null;

  /**
   * @param startTask the task the engine was loaded (and validated) with
   * @param onDrift told once per reload whose new shape the policy does not validate against,
   *   with Cedar's messages and locations (task attribute names, never values): an operator log
   */
  constructor(
    private readonly engine: PolicyEngine,
    startTask: JsonObject,
    private readonly opts: { source?: string; onDrift?: (message: string) => void } = {},
  ) {
    this.bound = startTask;
  }

  get digest() {
    return this.engine.digest;
  }

  countsRead(tool: string): { calls: boolean; callsAll: boolean } {
    return this.engine.countsRead(tool);
  }

  /** Throws PolicyEvalError (→ fail_closed) on drift, as the engine does on an evaluation error. */
  evaluate(req: PolicyRequest): PolicyDecision {
    if (req.task !== this.bound) this.rebind(req.task);
    if (this.drift) throw this.drift;
    return this.engine.evaluate(req);
  }

  private rebind(task: JsonObject): void {
    let problems: PolicyProblem[];
    try {
      problems = this.engine.adoptTask(task);
    } catch {
      problems = [{ policyId: null, message: 'the policy could not be validated against the task context', help: null }];
    }
    this.bound = task;
    if (problems.length === 0) {
      this.drift = null;
      return;
    }
    const ids = [...new Set(problems.map((p) => p.policyId).filter((id): id is string => id !== null))].sort();
    const named = ids.length ? `policies ${ids.map((i) => JSON.stringify(i)).join(', ')}` : 'the policy';
    this.drift = new PolicyEvalError(
      `the task context changed shape and ${named} no longer validate against it; calls fail closed until it has a shape the policy validates against`,
      ids,
    );
    this.opts.onDrift?.(
      `task context reloaded: ${named} no longer validate against its shape; calls fail closed\n` +
        problems.map((p) => '  ' + formatProblem(p, this.opts.source)).join('\n'),
    );
  }
}
