// Operations of `write` tools (product.md section 5). Guards against a side effect happening
// twice: a host retrying after a lost answer gets the stored result instead of a second email;
// a retry after a crash or timeout, when nobody knows whether the first attempt ran, is refused
// until an operator reconciles; an id reused for a different call is a conflict, not a replay.
// Without an explicit id the fingerprint names the call only while it is unsettled (ADR 015):
// once it settled, an identical call is a new operation and runs (v1, v2, v1 must leave v1).
// Reads the operation inside the decision's transaction; `pending` is written by the onAllow
// effect in that same transaction, so it is durable before the call is forwarded, and two
// gates on one home cannot both begin the same operation.
import type { Facts } from '../facts.js';
import { PASS, refuse, type Verdict } from '../verdict.js';
import { operationDigest, operationIdOf } from '../../operations/operation-id.js';
import { OPERATOR_RESULT } from '../../operations/operations.js';
import type { UpstreamReply } from '../../core/outcome.js';

/** The answer an attempt that never reached the tool settles with: an error, so it may be retried. */
const NOT_RUN: UpstreamReply = { error: { code: -32800, message: 'not forwarded' } };

export function checkOperations(f: Facts): Verdict {
  if (f.tool.effect !== 'write') return PASS;
  // The agent runs the tool (LLM door): no attempt to hold pending or replay; the entry says so.
  if (f.session.scope.execution === 'agent') {
    f.notes.fields.operation_state = 'not_applicable';
    return PASS;
  }
  const store = f.services.operations;
  if (!store) return refuse('fail_closed', 'the operations store is not available');
  const which = operationIdOf(f.call, f.tool, f.fingerprint);
  if (!which.ok) return refuse('argument_invalid', which.detail);
  const { id } = which;
  const fields = f.notes.fields;
  fields.operation = operationDigest(id);
  fields.operation_id_source = which.source;

  const op = store.get(id);
  if (op && op.fingerprint !== f.fingerprint) {
    fields.operation_state = op.state;
    return refuse('operation_conflict', 'this operation id was used for a different call');
  }
  let attempt: number;
  // Settling belongs to the attempt this decision began: when its effect never ran (a later
  // check refused, shadow mode forwarded anyway), the reply must not settle someone else's.
  let begun = false;
  // The entry says the state found; the effect (run before the entry is appended) updates it
  // to the state the allowed call leaves behind.
  fields.operation_state = op ? op.state : 'new';
  if (!op) {
    attempt = 1;
    f.notes.onAllow.push(() => {
      store.begin(id, f.fingerprint, f.call.tool, f.now);
      begun = true;
      fields.operation_state = 'pending';
    });
  } else if (which.source === 'fingerprint' && (op.state === 'succeeded' || op.state === 'failed')) {
    // Settled, and nothing but the call's own content names it: the same call again is a new
    // operation (a second write of v1 after v2, a toggle switched back), not a replay.
    attempt = op.attempts + 1;
    f.notes.onAllow.push(() => {
      store.renew(id, f.fingerprint, op, f.now);
      begun = true;
      fields.operation_state = 'pending';
    });
  } else {
    switch (op.state) {
      case 'succeeded':
        fields.operation_state = 'succeeded';
        if (f.services.mode === 'shadow') {
          // Shadow mode forwards every call: it only records that enforce would have replayed.
          fields.operation_shadow = 'would_replay';
          return PASS;
        }
        f.notes.replay = op.result ?? OPERATOR_RESULT;
        return PASS;
      case 'failed':
        attempt = op.attempts + 1;
        f.notes.onAllow.push(() => {
          store.retry(id, f.fingerprint, op.attempts, f.now);
          begun = true;
          fields.operation_state = 'pending';
        });
        break;
      case 'pending':
        fields.operation_state = 'pending';
        return refuse('reconcile_before_retry', 'an earlier attempt of this operation is still in flight (pending)');
      case 'unknown':
        fields.operation_state = 'unknown';
        return refuse('reconcile_before_retry', 'the outcome of an earlier attempt is unknown: cloakpipe ops reconcile');
    }
  }
  fields.operation_attempt = attempt;
  f.notes.afterReply.push((reply, now) => ({ effect: () => void (begun && store.settle(id, attempt, reply, now)) }));
  f.notes.afterFailure.push((why, now) => void (begun && store.fail(id, attempt, why, now)));
  // Nothing ran: the attempt failed, so the same operation may be retried.
  f.notes.notForwarded.push((now) => ({ effect: () => void (begun && store.settle(id, attempt, NOT_RUN, now)) }));
  // The decision may have committed unanswered: its pending attempt, if there, never ran either.
  f.notes.notRecorded.push((now) => begun && store.withdraw(id, attempt, f.now, NOT_RUN, now));
  return PASS;
}
