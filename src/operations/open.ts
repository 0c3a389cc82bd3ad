// Wiring for the gate: the operations store and the approval service on the gate's connection
// (ledger.db with operations.db attached as `ops`), and start-up recovery. Throws (KeyError,
// StoreError) when an approver key or the store does not load: the gate must not start.
import type { Db } from '../store/sqlite.js';
import { OperationsStore } from './store.js';
import { approvalService, type ApprovalService } from '../approvals/service.js';
import { loadApproverKeys } from '../approvals/keys.js';

export interface OperationsServices {
  operations: OperationsStore;
  approvals: ApprovalService;
  /** How many `pending` operations start-up declared `unknown`. */
  recovered: number;
}

export function openOperationsServices(
  db: Db,
  opts: { schema?: string; approverKeys: readonly string[]; approvalsDir: string | null; now?: number },
): OperationsServices {
  const approvers = loadApproverKeys(opts.approverKeys);
  const operations = new OperationsStore(db, opts.schema ?? 'ops');
  // Every pending left by a gate that is no longer running becomes unknown, before any call.
  const recovered = db.transaction(() => operations.recoverPending(opts.now ?? Date.now())).immediate();
  const approvals = approvalService({ store: operations, approvers, inboxDir: opts.approvalsDir });
  return { operations, approvals, recovered };
}
