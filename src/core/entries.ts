// The ledger's entry kinds (product.md section 7) as types: what each kind records, written by
// the gate, the flow session, pins, epochs and operator commands, and read back by `ledger show`
// and `scope report` through these names instead of string keys. Digests only, never payloads:
// every `*_digest`, `fingerprint` and `digest` field is `sha256:HEX`.

/** `sha256:HEX` (written by core/digest.ts). */
type Digest = string;
import type { JsonValue } from './json.js';
import type { Mode, UnknownWhy } from './outcome.js';
import type { RefusalCode } from './refusal.js';

/** What the gate decided for one call. */
export type DecisionOutcome = 'allow' | 'refuse' | 'would_refuse' | 'replay';

/** The outcome of a decision, derived once: replay and allow pass, a refusal in shadow mode is recorded but not enforced. */
export function decisionOutcome(allowed: boolean, replayed: boolean, mode: Mode): DecisionOutcome {
  if (allowed) return replayed ? 'replay' : 'allow';
  return mode === 'enforce' ? 'refuse' : 'would_refuse';
}

/** What came back from a forwarded call; `not_forwarded`: allowed, then withdrawn before it reached the tool (nothing ran). */
export type ResultOutcome = 'ok' | 'error' | 'unknown' | 'not_forwarded';

export interface StartupFields {
  kind: 'startup';
  mode: Mode;
  release: string;
  manifest_digest: Digest;
  policy_digest: Digest;
  context_digest: Digest;
  gate_key: string;
  pid: number;
  operations_recovered: number;
}

export interface ShutdownFields {
  kind: 'shutdown';
  reason: string;
}

/** One decision; check notes (approval, operation, ceiling, …) add fields of their own. */
export interface DecisionFields {
  kind: 'decision';
  outcome: DecisionOutcome;
  /** A declared tool's name; an undeclared one is model-chosen text, recorded as tool_digest. */
  tool?: string;
  tool_digest?: Digest;
  reason?: RefusalCode;
  fingerprint?: Digest;
  args_digest?: Digest;
  /** A wire refusal's line (the message was never a call). */
  line_digest?: Digest;
  context_digest?: Digest;
  task?: string | null;
  session_label?: string;
  agent?: string;
  manifest_digest: Digest;
  policy_digest: Digest;
  operation?: string;
  operation_state?: string;
  [note: string]: JsonValue | undefined;
}

export interface ResultFields {
  kind: 'result';
  outcome: ResultOutcome;
  /** Seq of the decision entry this settles. */
  decision: number;
  fingerprint: Digest;
  result_digest?: Digest;
  why?: UnknownWhy;
}

export interface LabelFields {
  kind: 'label';
  from: string;
  to: string;
  cause: string;
  tool?: string;
  digest: Digest;
  /** The door session whose label rose (a digest of its id) and its agent, as on its decisions. */
  session?: Digest;
  agent?: string;
}

export type PinsFields =
  | { kind: 'pins'; action: 'pinned'; tool: string; digest: string; source: 'manifest' | 'tools/list' }
  | { kind: 'pins'; action: 'changed'; tool: string; pinned: string; observed: string }
  | { kind: 'pins'; action: 'restored'; tool: string; digest: string };

/** The manifest and policy files changed under a running gate: reloaded, or refused (calls fail closed). */
export type ReloadFields =
  | { kind: 'reload'; outcome: 'loaded'; manifest_digest: Digest; policy_digest: Digest }
  | { kind: 'reload'; outcome: 'failed' };

export interface EpochFields {
  kind: 'epoch';
  first: number;
  last: number;
  size: number;
  root: string; // sha256:HEX, the RFC 6962 root
}

export interface AnchorFailureFields {
  kind: 'anchor_failure';
  epoch: number;
  anchor: 'rfc3161' | 'rekor';
  reason: string;
}

export type OperatorFields =
  | {
      kind: 'operator';
      action: 'reconcile';
      operation: Digest;
      outcome: string;
      state_before: string;
      state: string;
      attempts: number;
      tool: string;
      fingerprint: string;
      result_digest?: Digest;
      user: string | null;
    }
  | { kind: 'operator'; action: 'pins_accept'; release: string; tool: string; from: string; to: string; user: string | null }
  | (InboxDecisionFields & { action: 'approve'; receipt: Digest; expires_at: string })
  | (InboxDecisionFields & { action: 'deny' })
  | {
      /** A confinement restriction update (confine-control): its line by digest, the state in force after it. */
      kind: 'operator';
      action: 'restrict';
      accepted: boolean;
      admission: 'open' | 'closed';
      revision: number | null;
      tools: string[] | null;
      line_digest: Digest;
    };

/** Why a door's session ended: the host ended it (DELETE), it sat idle, its upstream went, the gate stopped. */
export type SessionEndReason = 'deleted' | 'idle' | 'upstream_exit' | 'shutdown';

/**
 * A session of a door that has many (the HTTP door: one per MCP session) opened or ended. The
 * session is a digest of its id (the id is a bearer capability: never recorded), as on every
 * decision entry of that session.
 */
export type SessionFields =
  | { kind: 'session'; action: 'open'; session: Digest; agent: string; task: string | null; context_digest: Digest }
  | { kind: 'session'; action: 'close'; session: Digest; reason: SessionEndReason };

/** A person decided an approval request in the inbox (inbox.md): approve signs a receipt (named
 *  by its id), deny closes the request. Digests and ids only. */
export interface InboxDecisionFields {
  kind: 'operator';
  tool: string;
  fingerprint: Digest;
  args_digest: Digest;
  /** The refusal's entry, in the chain of `gate` (null: this home's chain). */
  request_entry: number;
  gate: string | null;
  /** The inbox's approver key id. */
  approver: string;
  user: string | null;
}

/** Every kind's own fields: what a caller appends (seq, ts, prev and sig are the ledger's). */
export type EntryFields =
  | StartupFields
  | ShutdownFields
  | DecisionFields
  | ResultFields
  | LabelFields
  | PinsFields
  | ReloadFields
  | EpochFields
  | AnchorFailureFields
  | OperatorFields
  | SessionFields;

export type EntryKind = EntryFields['kind'];

/** What the ledger adds to every entry. */
export interface EntryHeader {
  v: 1;
  seq: number;
  ts: string; // ISO 8601 UTC with milliseconds
  prev: string;
  sig: string;
}

/** A stored entry of one kind. */
export type EntryOf<K extends EntryKind> = Extract<EntryFields, { kind: K }> & EntryHeader;
export type LedgerEntry = EntryFields & EntryHeader;
