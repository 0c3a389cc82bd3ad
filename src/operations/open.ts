// Wiring for the gate: the operations and the approval service over the home's store, and
// start-up recovery. Throws (KeyError, StoreError) when an approver key or the store does not
// load: the gate must not start.
import type { Store } from '../store/ports.js';
import { Operations, ownerAlive, ownerBesideThisHost, ownerOnThisHost } from './operations.js';
import { approvalService, type ApprovalService } from '../approvals/service.js';
import { loadApproverKeys } from '../approvals/keys.js';

export interface OperationsServices {
  operations: Operations;
  approvals: ApprovalService;
  /** How many `pending` operations start-up declared `unknown`. */
  recovered: number;
}

export async function openOperationsServices(
  store: Store,
  /**
   * `shared`: the store is a fleet's (PostgreSQL); a pending operation owned by a gate on another
   * host is left pending (reconcile_before_retry everywhere) — this host cannot tell that gate is
   * gone; it or an operator marks it.
   */
  opts: { approverKeys: readonly string[]; gateKeyId: string; approvalsDir: string | null; now?: number; shared?: boolean; gateId?: string | null; requestTtlMs?: number },
): Promise<OperationsServices> {
  const approvers = loadApproverKeys(opts.approverKeys, opts.gateKeyId);
  const operations = new Operations(store.operations);
  // Every pending left by a gate that is no longer running becomes unknown, before any call.
  // An owner this host cannot see is left pending (ADR 111): on a shared store any other host; on
  // a home, a gate in another pid namespace of this kernel (containers sharing the home).
  const unseen = opts.shared ? (o: string) => !ownerOnThisHost(o) : ownerBesideThisHost;
  const alive = (o: string | null) => ownerAlive(o) || (o !== null && unseen(o));
  const recovered = await store.transact(() => operations.recoverPending(opts.now ?? Date.now(), alive));
  const approvals = approvalService({
    receipts: store.receipts,
    requests: store.approvalRequests,
    approvers,
    inboxDir: opts.approvalsDir,
    gateId: opts.gateId ?? null,
    ...(opts.requestTtlMs !== undefined ? { requestTtlMs: opts.requestTtlMs } : {}),
  });
  return { operations, approvals, recovered };
}
