// What a check says about a call. A refusal carries its code and a one-line detail that never
// holds an argument value; checks may annotate the decision (policy ids, receipt, operation).
import type { DecisionRefusal } from '../core/refusal.js';
import type { JsonValue } from '../core/json.js';
import type { UnknownWhy, UpstreamReply } from '../core/outcome.js';
import type { EntryFields } from '../ledger/entry.js';

export interface Refused {
  ok: false;
  code: DecisionRefusal;
  detail: string;
}

export interface Passed {
  ok: true;
}

export type Verdict = Refused | Passed;

export const PASS: Passed = { ok: true };

export function refuse(code: DecisionRefusal, detail: string): Refused {
  return { ok: false, code, detail };
}

/** What the answer to a forwarded call does: in-memory changes happen when the function runs
 *  (before the host sees the reply); `effect` and `entries` are applied in one transaction. */
export interface AfterReply {
  effect?: () => void;
  entries?: EntryFields[];
}

/** Facts a check adds to the decision's ledger entry (digests and ids only) and effects to apply. */
export interface Annotations {
  /** Extra ledger fields (names from the domain; values never argument values). */
  fields: { [k: string]: JsonValue };
  /** State changes to run inside the decision's transaction when the call is allowed. */
  onAllow: (() => void)[];
  /** State changes to run inside the decision's transaction when the call is refused (enforce
   *  mode), after its entry is appended: `entry` is that entry's seq. */
  onRefuse: ((entry: number) => void)[];
  /** A stored result to answer with instead of forwarding (operation replay). */
  replay?: JsonValue;
  /** What the upstream's answer (or a replayed result) does: the session's label, settling an
   *  operation. `now` is the gate's clock when the answer arrived. */
  afterReply: ((reply: UpstreamReply, now: number) => AfterReply)[];
  /** Run in a transaction when the outcome is unknown: timeout, upstream died, gate error. */
  afterFailure: ((why: UnknownWhy, now: number) => void)[];
  /** Allowed, then withdrawn before it reached the tool (nothing ran): what each check undoes.
   *  A hook of its own, so no effect meant for a real answer ever runs on a made-up one. */
  notForwarded: ((now: number) => AfterReply)[];
  /** The decision's transaction failed (the call refused fail_closed, never forwarded) but may
   *  have committed all the same (its COMMIT unanswered): run in a later transaction, each undoes
   *  what it may have left that nothing would settle. True when it changed something. */
  notRecorded: ((now: number) => boolean)[];
}
