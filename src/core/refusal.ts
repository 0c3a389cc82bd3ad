// The refusal table of product.md section 1, as one type every check, the ledger, telemetry
// and the CLI share. Callers switch on the code; they never parse messages.

export const DECISION_REFUSALS = [
  'undeclared_tool',
  'undeclared_argument',
  'argument_invalid',
  'scope_mismatch',
  'policy_denied',
  'approval_required',
  'approval_invalid',
  'reconcile_before_retry',
  'operation_conflict',
  'sink_ceiling_exceeded',
  'tool_definition_changed',
  'revoked',
  'admission_closed',
  'fail_closed',
] as const;

export const WIRE_REFUSALS = [
  'malformed_json',
  'batch_not_allowed',
  'duplicate_key',
  'number_out_of_range',
  'frame_too_large',
  'invalid_request',
  // Not in product.md's table: a session's calls sent with a task past --max-in-flight (ADR 051).
  'too_many_tasks',
] as const;

export type DecisionRefusal = (typeof DECISION_REFUSALS)[number];
export type WireRefusal = (typeof WIRE_REFUSALS)[number];
export type RefusalCode = DecisionRefusal | WireRefusal;

/** JSON-RPC error code for a refusal (product.md section 1). */
export function jsonRpcCode(code: RefusalCode): number {
  switch (code) {
    case 'malformed_json':
    case 'number_out_of_range':
    case 'duplicate_key':
    case 'frame_too_large':
      return -32700;
    case 'batch_not_allowed':
    case 'invalid_request':
      return -32600;
    default:
      return -32001;
  }
}
