// Human approval for tools with `approval: required` (product.md section 5). Guards against an
// agent performing a sensitive call no person approved, or stretching one approval: a receipt
// counts only when signed by an --approver-key, bound to this exact call's fingerprint, within
// its validity window and never used before. Using it is an onAllow effect (a row keyed by the
// receipt id) in the decision's transaction, so the receipt is spent durably before the call is
// forwarded and no crash or race lets it authorize a second call.
//
// Where a receipt comes from: params._meta["cloakpipe/approval"] when present (and then only
// that one is judged), else the home's approvals inbox and the receipts the approval inbox page
// signed into the store (the first valid, unused receipt for this fingerprint). A replay of a
// succeeded operation needs no receipt: nothing runs. A call refused `approval_required` is
// recorded as an approval request in the same transaction as its refusal (inbox.md).
import type { Facts } from '../facts.js';
import { PASS, refuse, type Verdict } from '../verdict.js';
import { alreadyUsed, verifyReceipt, type ReceiptVerdict } from '../../approvals/receipt.js';
import type { JsonValue } from '../../core/json.js';
import { canonicalize } from '../../core/canonical.js';

export const META_APPROVAL = 'cloakpipe/approval';

export function checkApproval(f: Facts): Verdict {
  if (f.tool.approval !== 'required') return PASS;
  if (f.notes.replay !== undefined) {
    f.notes.fields.approval = 'replay';
    return PASS;
  }
  const svc = f.services.approvals;
  if (!svc) return refuse('fail_closed', 'the approval service is not available');

  let candidates: JsonValue[];
  let source: 'meta' | 'inbox';
  if (Object.prototype.hasOwnProperty.call(f.call.meta, META_APPROVAL)) {
    candidates = [f.call.meta[META_APPROVAL]];
    source = 'meta';
  } else {
    candidates = svc.inbox(f.fingerprint);
    source = 'inbox';
    if (candidates.length === 0) {
      // The refused call waits in the approval inbox for a person (recorded with the refusal).
      f.notes.onRefuse.push((entry) =>
        svc.request(
          {
            fingerprint: f.fingerprint,
            tool: f.call.tool,
            arguments: f.call.arguments,
            task: f.call.taskId,
            label: f.sessionLabel,
            rule: { release: f.manifest.manifest.release, manifest_digest: f.manifest.digest, tool: f.call.tool, declaration: f.tool as unknown as JsonValue },
          },
          entry,
          f.now,
        ),
      );
      return refuse('approval_required', `this call needs a person's approval: cloakpipe approve --fingerprint ${f.fingerprint}, or cloakpipe inbox serve`);
    }
  }

  let firstFailure: ReceiptVerdict | null = null;
  for (const c of candidates) {
    let v = verifyReceipt(c, { fingerprint: f.fingerprint, approvers: svc.approvers, now: f.now });
    if (v.ok) {
      const used = svc.usedReceipt(v.id);
      if (used) v = alreadyUsed(used.used_at);
    }
    if (!v.ok) {
      firstFailure ??= v;
      continue;
    }
    const { receipt, id } = v;
    f.notes.fields.receipt = id;
    f.notes.fields.approver = receipt.approver;
    f.notes.fields.approval = source;
    f.notes.onAllow.push(() =>
      svc.consume(
        { receipt_id: id, nonce: receipt.nonce, approver: receipt.approver, fingerprint: receipt.fingerprint, receipt: canonicalize(receipt) },
        f.now,
      ),
    );
    return PASS;
  }
  f.notes.fields.approval = source;
  return refuse('approval_invalid', (firstFailure as { detail: string }).detail);
}
