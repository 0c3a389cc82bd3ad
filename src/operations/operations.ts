// Operations of `write` tools (product.md section 5): the state machine, over the store's
// operations port. Guards against a side effect happening twice (a retry after a lost answer, a
// crash, a race between two gates). Every method is synchronous and runs inside the caller's
// `store.transact`, together with the decision's ledger entry.
//
// State machine:
//   (none) ──begin──► pending ──settle──► succeeded | failed
//   pending ──fail (timeout, upstream died, gate error)──► unknown
//   pending ──recoverPending (start-up; owning gate no longer running)──► unknown
//   failed ──retry──► pending            (a new attempt of the same call)
//   succeeded | failed ──renew──► pending (no explicit id: the same call again is a new operation)
//   unknown | pending(dead owner) ──reconcile──► succeeded | failed   (operator; not-executed → failed)
// Each attempt is numbered: a settle or fail for an attempt that is no longer the pending one
// (late answer, another gate's start-up already declared it unknown) changes nothing.
import type { JsonValue } from '../core/json.js';
import { outcomeOf, type UpstreamReply } from '../core/outcome.js';
import { StoreError, type Operation, type OperationState, type OperationsPort } from '../store/ports.js';
import { THIS_GATE, ownerAlive, ownerOnThisHost } from './owner.js';

export { OPERATION_STATES, type Operation, type OperationState } from '../store/ports.js';
export type ReconcileOutcome = 'succeeded' | 'failed' | 'not-executed';
export { THIS_GATE, ownerAlive, ownerBesideThisHost, ownerOnThisHost } from './owner.js';

export class Operations {
  constructor(
    readonly port: OperationsPort,
    readonly owner: string = THIS_GATE,
  ) {}

  get(id: string): Operation | null {
    return this.port.get(id);
  }

  list(state?: OperationState, limit = 10_000): Operation[] {
    return this.port.list(state, limit);
  }

  /** A new operation, pending: durable before the call is forwarded. Returns the attempt number. */
  begin(id: string, fingerprint: string, tool: string, now: number): number {
    this.port.insert({ id, fingerprint, tool, owner: this.owner, at: iso(now) });
    return 1;
  }

  /** A new attempt of a failed operation with the same call. Returns the new attempt number. */
  retry(id: string, fingerprint: string, failedAttempt: number, now: number): number {
    if (!this.port.restart(id, fingerprint, { state: 'failed', attempts: failedAttempt }, 'retry', this.owner, iso(now)))
      throw new StoreError('operation changed while deciding');
    return failedAttempt + 1;
  }

  /**
   * A settled operation named only by its fingerprint, called again: a new operation in the
   * same row (attempt + 1, pending). Returns the new attempt number.
   */
  renew(id: string, fingerprint: string, settled: { state: OperationState; attempts: number }, now: number): number {
    if (settled.state !== 'succeeded' && settled.state !== 'failed') throw new StoreError('only a settled operation is renewed');
    if (!this.port.restart(id, fingerprint, { state: settled.state, attempts: settled.attempts }, 'renew', this.owner, iso(now)))
      throw new StoreError('operation changed while deciding');
    return settled.attempts + 1;
  }

  /**
   * The upstream answered attempt `attempt`: a JSON-RPC error or a result with `isError: true`
   * is `failed`, anything else `succeeded`; the answer is stored. Returns the new state, or
   * null when that attempt is no longer pending (nothing changes).
   */
  settle(id: string, attempt: number, reply: UpstreamReply, now: number): OperationState | null {
    const state = outcomeOf(reply);
    const to = { state, result: reply.result === undefined ? null : reply.result, error: reply.error === undefined ? null : (reply.error as JsonValue) };
    return this.port.settle(id, attempt, to, iso(now)) ? state : null;
  }

  /**
   * The decision that began attempt `attempt` at `begunAt` was refused because recording it failed,
   * so the call never reached the tool, yet its COMMIT may have landed unanswered. If this
   * process's pending attempt from that decision is in the store, it is settled with `notRun` (a
   * failed attempt, which a retry may run again) instead of pending for as long as this gate runs.
   * An attempt another decision began (another time, or another gate) is left alone. True when it
   * changed.
   */
  withdraw(id: string, attempt: number, begunAt: number, notRun: UpstreamReply, now: number): boolean {
    const op = this.port.get(id);
    if (!op || op.state !== 'pending' || op.attempts !== attempt || op.owner !== this.owner || op.updated_at !== iso(begunAt)) return false;
    return this.settle(id, attempt, notRun, now) !== null;
  }

  /** The outcome of attempt `attempt` is unknown (timeout, upstream died, gate error). */
  fail(id: string, attempt: number, why: string, now: number): boolean {
    return this.port.markUnknown(id, attempt, why, iso(now));
  }

  /**
   * Start-up: every `pending` whose gate is no longer running becomes `unknown`: nobody will
   * ever learn its outcome. Pending operations of another live gate on the same home stay
   * pending (they will settle). Returns how many changed.
   */
  recoverPending(now: number, alive: (owner: string | null) => boolean = ownerAlive): number {
    let n = 0;
    for (const owner of this.port.pendingOwners()) {
      if (owner === this.owner || !alive(owner)) n += this.port.recoverOwner(owner, iso(now));
    }
    return n;
  }

  /**
   * An operator settles an operation whose outcome is unknown (or pending on a gate that is
   * gone). `not-executed` makes it `failed` without a result, so the same call may run again.
   */
  /**
   * `ownerGone`: the operator checked that the gate owning a `pending` operation on another host
   * is stopped. This host cannot tell, and settling a call still running there lets a retry run
   * it twice.
   */
  reconcile(
    id: string,
    outcome: ReconcileOutcome,
    result: JsonValue | null,
    now: number,
    alive = ownerAlive,
    ownerGone = false,
  ): { before: Operation; after: Operation } {
    const before = this.get(id);
    if (!before) throw new ReconcileError('no such operation');
    if (before.state === 'pending' && alive(before.owner))
      throw new ReconcileError('the operation is in flight on a running gate; wait for it to settle');
    if (before.state === 'pending' && before.owner !== null && !ownerOnThisHost(before.owner) && !ownerGone)
      throw new ReconcileError(
        `the operation is pending on a gate of another host (owner ${before.owner}), which this host cannot see: make sure that gate is stopped, then repeat with --owner-gone`,
      );
    if (before.state !== 'unknown' && before.state !== 'pending')
      throw new ReconcileError(`the operation is ${before.state}; only unknown (or orphaned pending) operations are reconciled`);
    let stored: JsonValue | null = null;
    if (outcome === 'succeeded') stored = result ?? OPERATOR_RESULT;
    else if (outcome === 'failed' && result !== null) stored = result;
    const state = outcome === 'succeeded' ? 'succeeded' : 'failed';
    if (!this.port.reconcile(id, before, { state, result: stored, note: `operator:${outcome}` }, iso(now)))
      throw new ReconcileError('the operation changed meanwhile; look again');
    return { before, after: this.get(id)! };
  }
}

export class ReconcileError extends Error {}

/** What a replay answers when an operator declared success without giving the result. */
export const OPERATOR_RESULT: JsonValue = {
  content: [{ type: 'text', text: 'cloakpipe: this operation was reconciled as succeeded by an operator; its result was not recorded.' }],
};

function iso(ms: number): string {
  return new Date(ms).toISOString();
}
