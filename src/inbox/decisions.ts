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
import type { DecisionJournal, DecisionNote } from './decision-journal.js';

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
  /** The embedded store, whose two files commit one after the other: decisions noted there first. */
  journal?: DecisionJournal;
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
  // Read and signed before the transaction, so that a journal can hold what it will commit.
  const seen = await store.transact(() => ({ r: store.approvalRequests.get(id), head: ledger.head()?.seq ?? -1 }));
  if (!seen.r) return { ok: false, why: 'gone' };
  const r = seen.r;
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
  let note: DecisionNote;
  if (action === 'deny') note = { id, head: seen.head, entry: { ...common, action: 'deny' } };
  else {
    const receipt = signReceipt({ privateKey: approver.privateKey, fingerprint: r.fingerprint as never, issuedAt: now, ttlMs: parts.ttlMs });
    const offer = { receipt_id: receiptId(receipt), fingerprint: r.fingerprint, receipt: canonicalize(receipt as unknown as JsonValue), expires_at: receipt.expires_at };
    note = { id, head: seen.head, entry: { ...common, action: 'approve', receipt: offer.receipt_id as never, expires_at: offer.expires_at }, offer };
  }
  const file = parts.journal?.write(note);
  let decided: Decided;
  let completed: string[] = [];
  try {
    decided = await store.transact((): Decided => {
      // Another inbox (or this one) stopped between its two commits on this request: its decision stands.
      completed = parts.journal?.completeFor(store, ledger, id, file) ?? [];
      const taken = store.approvalRequests.take(id, at);
      if (!taken || taken.fingerprint !== r.fingerprint) return { ok: false, why: 'gone' };
      // A receipt for this call already waits, or was used: the request was recorded by a gate
      // whose read came before that approval committed (PostgreSQL, a retry racing the approval).
      // Taken, so the page no longer shows it, and nothing decided: another receipt would let the
      // call run twice, and a denial would not stop the receipt there is.
      const signed = store.approvalRequests.offered(r.fingerprint).find((o) => o.expires_at > at);
      if (signed) return { ok: false, why: 'approved', receipt: signed.receipt_id, expires_at: signed.expires_at };
      if (note.offer) store.approvalRequests.offer(note.offer);
      const e = ledger.appendInTx(note.entry);
      return note.offer
        ? { ok: true, action, fingerprint: r.fingerprint, entry: e.seq, receipt: note.offer.receipt_id, expires_at: note.offer.expires_at }
        : { ok: true, action, fingerprint: r.fingerprint, entry: e.seq };
    });
  } catch (e) {
    // One file may have committed: what it holds decides, now rather than at the next start.
    if (file !== undefined) await parts.journal!.recover(store, ledger, file).catch(() => undefined);
    throw e;
  }
  if (file !== undefined) parts.journal!.drop(file);
  parts.journal?.forget(completed);
  return decided;
}
