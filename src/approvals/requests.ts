// Approval requests (inbox.md): a call refused `approval_required` is kept, as it would be
// forwarded, for the person who must see it to approve it. Guards against approving blind: the
// page shows exactly the call whose fingerprint the receipt will bind. Built here, stored through
// the store's ApprovalRequestsPort (operations store only: the ledger keeps digests).
import { randomBytes } from 'node:crypto';
import { canonicalize } from '../core/canonical.js';
import type { JsonObject, JsonValue } from '../core/json.js';
import type { ApprovalRequest } from '../store/ports.js';

/** How long a request waits for a person unless the gate is told otherwise (--request-ttl). */
export const DEFAULT_REQUEST_TTL_MS = 3_600_000;

/**
 * Open requests a store keeps at most (ADR 058): each holds a call's argument values (up to the
 * frame limit), and the gate records one per refused call whether or not an inbox runs. Past it
 * the oldest goes; its call is still refused and can still be approved with `cloakpipe approve`.
 * The inbox page lists as many, so every request kept is one a person can see.
 */
export const MAX_OPEN_REQUESTS = 200;

/** What the approval check knows about the refused call. */
export interface RefusedCall {
  fingerprint: string;
  tool: string;
  arguments: JsonObject;
  task: string | null;
  label: string;
  /** The manifest rule that requires approval: the release, its digest and the tool's declaration. */
  rule: { release: string; manifest_digest: string; tool: string; declaration: JsonValue };
}

export function approvalRequest(c: RefusedCall, o: { entry: number; gate: string | null; now: number; ttlMs: number }): ApprovalRequest {
  return {
    id: randomBytes(12).toString('base64url'),
    fingerprint: c.fingerprint,
    tool: c.tool,
    call: canonicalize({ tool: c.tool, arguments: c.arguments }),
    task: c.task,
    label: c.label,
    entry: o.entry,
    gate: o.gate,
    rule: canonicalize(c.rule as unknown as JsonValue),
    created_at: new Date(o.now).toISOString(),
    expires_at: new Date(o.now + o.ttlMs).toISOString(),
  };
}
