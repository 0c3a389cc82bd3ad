// Deciding an approval request (inbox.md). Approve signs the receipt `cloakpipe approve` signs
// (approvals/receipt.ts: bound to the fingerprint, valid for the TTL, single use) and offers it
// in the store, where the gate takes receipts; deny only closes the request. Either takes the
// request (a decision is final: of two at once, one finds it gone) and appends an operator entry
// signed by the gate key, in one transaction: digests and ids only, never an argument value.
import type { KeyObject } from 'node:crypto';
import type { Signer } from '../core/signer.js';
import { canonicalize } from '../core/canonical.js';
import { digestJson } from '../core/digest.js';
import { parseStrict } from '../wire/strict-parse.js';
import { isJsonObject, type JsonValue } from '../core/json.js';
import type { Ledger } from '../ledger/ledger.js';
import type { ApprovalRequest, Store } from '../store/ports.js';
import { receiptId, signReceipt } from '../approvals/receipt.js';

export interface Approver {
  /** A key file's private key, or a Signer for a key inside a token (it never leaves it). */
  privateKey: KeyObject | Signer;
  /** sha256 of the public key's SPKI DER, as receipts name it. */
  keyId: string;
  /** What the page calls the key (its file name, or its object in its token): whose key signs. */
  name: string;
}

export interface DecisionParts {
  store: Store;
  ledger: Ledger;
  approver: Approver;
  /** How long an approval's receipt is valid. */
  ttlMs: number;
  user: string | null;
  clock?: () => number;
}

export type Decided =
  | { ok: true; action: 'approve' | 'deny'; fingerprint: string; entry: number; receipt?: string; expires_at?: string }
  | { ok: false; why: 'gone' }
  | { ok: false; why: 'approved'; receipt: string; expires_at: string };

/** The arguments' digest of a stored request (the ledger's args_digest of its refusal). */
function argsDigest(r: ApprovalRequest): string {
  const call = parseStrict(r.call);
  const args: JsonValue = isJsonObject(call) && isJsonObject(call.arguments) ? call.arguments : {};
  return digestJson(args);
}

export async function decideRequest(parts: DecisionParts, id: string, action: 'approve' | 'deny'): Promise<Decided> {
  const now = (parts.clock ?? Date.now)();
  const at = new Date(now).toISOString();
  const { store, ledger, approver } = parts;
  return store.transact((): Decided => {
    const r = store.approvalRequests.take(id, at);
    if (!r) return { ok: false, why: 'gone' };
    // A receipt for this call already waits, or was used: the request was recorded by a gate
    // whose read came before that approval committed (PostgreSQL, a retry racing the approval).
    // Taken, so the page no longer shows it, and nothing decided: another receipt would let the
    // call run twice, and a denial would not stop the receipt there is.
    const signed = store.approvalRequests.offered(r.fingerprint).find((o) => o.expires_at > at);
    if (signed) return { ok: false, why: 'approved', receipt: signed.receipt_id, expires_at: signed.expires_at };
    const common = {
      kind: 'operator' as const,
      tool: r.tool,
      fingerprint: r.fingerprint,
      args_digest: argsDigest(r),
      request_entry: r.entry,
      gate: r.gate,
      approver: approver.keyId,
      user: parts.user,
    };
    if (action === 'deny') {
      const e = ledger.appendInTx({ ...common, action: 'deny' as const });
      return { ok: true, action, fingerprint: r.fingerprint, entry: e.seq };
    }
    const receipt = signReceipt({ privateKey: approver.privateKey, fingerprint: r.fingerprint as never, issuedAt: now, ttlMs: parts.ttlMs });
    const rid = receiptId(receipt);
    store.approvalRequests.offer({ receipt_id: rid, fingerprint: r.fingerprint, receipt: canonicalize(receipt as unknown as JsonValue), expires_at: receipt.expires_at });
    const e = ledger.appendInTx({ ...common, action: 'approve' as const, receipt: rid, expires_at: receipt.expires_at });
    return { ok: true, action, fingerprint: r.fingerprint, entry: e.seq, receipt: rid, expires_at: receipt.expires_at };
  });
}
