// What the approval check consults: the approver keys, the receipts waiting for a call (the
// home's approvals/ directory and those the inbox signed into the store), the used receipts
// (kept in the operations store, so single use holds across restarts and across gates), and
// where a call refused `approval_required` is recorded for the inbox.
import type { KeyObject } from 'node:crypto';
import type { JsonValue } from '../core/json.js';
import type { Digest } from '../core/digest.js';
import type { ApprovalRequestsPort, ReceiptsPort, UsedReceipt } from '../store/ports.js';
import { parseStrict } from '../wire/strict-parse.js';
import { Inbox } from './inbox.js';
import { approvalRequest, DEFAULT_REQUEST_TTL_MS, MAX_OPEN_REQUESTS, type RefusedCall } from './requests.js';

export interface ApprovalService {
  approvers: ReadonlyMap<string, KeyObject>;
  /** Receipts waiting for this fingerprint (unverified candidates): the directory's, then the store's. */
  inbox(fingerprint: Digest): JsonValue[];
  usedReceipt(receiptId: string): UsedReceipt | null;
  consume(u: Omit<UsedReceipt, 'used_at'>, now: number): void;
  /** Record a refused call for the inbox, and trim the stored ones; inside the decision's transaction, after its entry. */
  request(c: RefusedCall, entry: number, now: number): void;
}

export function approvalService(opts: {
  receipts: ReceiptsPort;
  requests: ApprovalRequestsPort;
  approvers: ReadonlyMap<string, KeyObject>;
  /** The home's approvals/ directory, or null for no directory inbox. */
  inboxDir: string | null;
  /** The gate's name in a shared store (its chain holds the refusal's entry); null on a home's own store. */
  gateId?: string | null;
  requestTtlMs?: number;
}): ApprovalService {
  const inbox = opts.inboxDir ? new Inbox(opts.inboxDir) : null;
  const stored = (fp: Digest): JsonValue[] =>
    opts.requests.offered(fp).flatMap((o) => {
      try {
        return [parseStrict(o.receipt)];
      } catch {
        return []; // not ours to judge further: verifyReceipt would call it malformed
      }
    });
  return {
    approvers: opts.approvers,
    inbox: (fp) => [...(inbox ? inbox.candidates(fp) : []), ...stored(fp)],
    usedReceipt: (id) => opts.receipts.used(id),
    consume: (u, now) => opts.receipts.consume(u, new Date(now).toISOString()),
    request: (c, entry, now) => {
      const id = opts.requests.record(approvalRequest(c, { entry, gate: opts.gateId ?? null, now, ttlMs: opts.requestTtlMs ?? DEFAULT_REQUEST_TTL_MS }));
      // No inbox need run for the requests to go: the gate deletes the expired ones and keeps at
      // most MAX_OPEN_REQUESTS, in this same transaction (ADR 058).
      opts.requests.trim(new Date(now).toISOString(), MAX_OPEN_REQUESTS, id);
    },
  };
}
