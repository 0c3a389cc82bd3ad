// Sink ceilings (product.md section 6): once the session has seen data at some label, a tool
// whose `accepts` is below it is refused, whatever Cedar says. Guards against a model (or text
// steering it) moving data read from a sensitive tool into a sink that may only receive less.
// A tool without `accepts` has the lowest ceiling: an undeclared ceiling is not a hole (ADR 003).
import type { Facts } from '../facts.js';
import { PASS, refuse, type Verdict } from '../verdict.js';

export function checkFlow(f: Facts): Verdict {
  const flow = f.session.flow;
  let label: string;
  let ceiling: string;
  try {
    // A re-read context that names a higher sensitivity raises the session for good (it only
    // rises, so this is safe to do while deciding); the rise is a fact of this decision.
    const raise = flow.observeContext(f.context);
    if (raise) f.notes.fields.label_raise = { from: raise.from, to: raise.to, cause: raise.cause, digest: raise.digest };
    label = flow.order.max(flow.label, f.sessionLabel);
    ceiling = flow.ceilingOf(f.call.tool);
    flow.order.rankOf(label);
    flow.order.rankOf(ceiling);
  } catch {
    return refuse('fail_closed', 'the session label could not be determined');
  }
  // Later checks (Cedar's context.session.label) and the decision entry see the label in force.
  f.sessionLabel = label;
  f.notes.fields.session_label = label;
  f.notes.fields.ceiling = ceiling;
  if (flow.order.above(label, ceiling))
    return refuse('sink_ceiling_exceeded', `session label ${label} is above the tool's ceiling ${ceiling}`);
  return PASS;
}
