// What the approval check consults: the approver keys, the inbox and the used receipts (kept
// in the operations database, so single use holds across restarts and across gates on one home).
import type { KeyObject } from 'node:crypto';
import type { JsonValue } from '../core/json.js';
import type { Digest } from '../core/digest.js';
import type { ReceiptsPort, UsedReceipt } from '../store/ports.js';
import { Inbox } from './inbox.js';

export interface ApprovalService {
  approvers: ReadonlyMap<string, KeyObject>;
  /** Receipts in the inbox that name this fingerprint (unverified candidates). */
  inbox(fingerprint: Digest): JsonValue[];
  usedReceipt(receiptId: string): UsedReceipt | null;
  consume(u: Omit<UsedReceipt, 'used_at'>, now: number): void;
}

export function approvalService(opts: {
  receipts: ReceiptsPort;
  approvers: ReadonlyMap<string, KeyObject>;
  /** The home's approvals/ directory, or null for no inbox. */
  inboxDir: string | null;
}): ApprovalService {
  const inbox = opts.inboxDir ? new Inbox(opts.inboxDir) : null;
  return {
    approvers: opts.approvers,
    inbox: (fp) => (inbox ? inbox.candidates(fp) : []),
    usedReceipt: (id) => opts.receipts.used(id),
    consume: (u, now) => opts.receipts.consume(u, new Date(now).toISOString()),
  };
}
