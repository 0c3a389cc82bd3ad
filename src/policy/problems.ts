// What can go wrong with a policy, as the engine reports it: a problem found loading it (the
// gate does not start, or a reload is refused) and an evaluation that could not decide (the
// call is refused `fail_closed`). Messages name policy ids, paths and reasons, never values.

/** One problem found loading a policy: Cedar's message and help, and where in the file. */
export interface PolicyProblem {
  policyId: string | null;
  message: string;
  help: string | null;
  line?: number;
  column?: number;
  /** The offending line with a caret under the span. */
  excerpt?: string;
}

export class PolicyLoadError extends Error {
  constructor(
    readonly problems: PolicyProblem[],
    readonly source: string,
  ) {
    super(problems.map((p) => formatProblem(p, source)).join('\n'));
  }
}

/** `file:line:col: message (help)`: the form an editor can jump to. */
export function formatProblem(p: PolicyProblem, source = 'policy'): string {
  const at = p.line !== undefined ? `${source}:${p.line}:${p.column}` : source;
  return `${at}: ${p.message}${p.help ? ` (${p.help})` : ''}`;
}

/** An evaluation that could not decide. `message` names policy ids only, never a value; the
 *  Cedar messages (which can quote values) are in `cedarErrors`, for `policy explain` only. */
export class PolicyEvalError extends Error {
  constructor(
    message: string,
    readonly policyIds: string[] = [],
    readonly cedarErrors: string[] = [],
  ) {
    super(message);
  }
}
