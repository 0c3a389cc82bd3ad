// `cloakpipe ops reconcile`: an operator settles an operation whose outcome was unknown. The
// state change and its operator entry, signed by the gate key, commit together or not at all.
import type { JsonValue } from '../core/json.js';
import { digestJson } from '../core/digest.js';
import type { Transact } from '../store/ports.js';
import type { Ledger } from '../ledger/ledger.js';
import { operationDigest } from './operation-id.js';
import type { Operation, Operations, ReconcileOutcome } from './operations.js';

export interface Reconciled {
  before: Operation;
  after: Operation;
  /** The operator entry's seq. */
  entry: number;
}

/** Throws ReconcileError when the operation does not exist or cannot be reconciled. */
export function reconcileOperation(
  parts: { operations: Operations; ledger: Ledger; transact: Transact },
  id: string,
  outcome: ReconcileOutcome,
  result: JsonValue | null,
  user: string | null,
  now = Date.now(),
  ownerGone = false,
): Promise<Reconciled> {
  return parts.transact(() => {
    const r = parts.operations.reconcile(id, outcome, result, now, undefined, ownerGone);
    const entry = parts.ledger.appendInTx({
      kind: 'operator',
      action: 'reconcile',
      operation: operationDigest(id),
      outcome,
      state_before: r.before.state,
      state: r.after.state,
      attempts: r.after.attempts,
      tool: r.after.tool,
      fingerprint: r.after.fingerprint,
      ...(result !== null ? { result_digest: digestJson(result) } : {}),
      user,
    });
    return { ...r, entry: entry.seq };
  });
}
