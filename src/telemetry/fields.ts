// What telemetry may carry: codes, digests, ids, counts and declared names, never argument
// values, results or model-chosen text. Every field name is on an allow-list with a kind, and
// every value is checked against its kind; what fails is dropped (and counted), never written.
import { DECISION_REFUSALS, WIRE_REFUSALS } from '../core/refusal.js';
import { digestJson, isDigest } from '../core/digest.js';

export type FieldValue = string | number | boolean | null;
export type Fields = { [name: string]: FieldValue | undefined };

type Kind = 'digest' | 'count' | 'number' | 'bool' | 'code' | 'reason' | 'label' | 'id' | 'tool' | 'method';

const KINDS: Record<string, Kind> = {
  // digests
  fingerprint: 'digest', manifest_digest: 'digest', policy_digest: 'digest', context_digest: 'digest',
  args_digest: 'digest', result_digest: 'digest', line_digest: 'digest', digest: 'digest', tool_digest: 'digest',
  operation_digest: 'digest', receipt_digest: 'digest', entry_hash: 'digest', root: 'digest',
  // counts and timings
  seq: 'count', entry: 'count', count: 'count', dropped: 'count', redacted: 'count', pid: 'count', bytes: 'count',
  entries: 'count', epoch: 'count', attempt: 'count', failures: 'count', in_flight: 'count',
  exit_code: 'number', code: 'number', decide_ms: 'number', commit_ms: 'number', upstream_ms: 'number', duration_ms: 'number',
  // flags
  declared: 'bool', replay: 'bool',
  // codes from the code base (enumerations, not free text)
  reason: 'reason', outcome: 'code', mode: 'code', cause: 'code', state: 'code', kind: 'code', why: 'code', signal: 'label',
  component: 'code', status: 'code',
  // labels and ids written by the operator or orchestrator (manifest, context, flags), not the model
  session_label: 'label', from: 'label', to: 'label', ceiling: 'label',
  task: 'id', agent: 'id', release: 'id', gate_key: 'id', approver: 'id', receipt: 'id',
  // tool names: only when the manifest declares them, else their digest
  tool: 'tool',
  method: 'method',
};

const REASONS = new Set<string>([...DECISION_REFUSALS, ...WIRE_REFUSALS]);
const CODE = /^[a-z][a-z0-9_]{0,63}$/;
const LABEL = /^[A-Za-z0-9_][A-Za-z0-9_.:-]{0,127}$/;
const ID = /^[A-Za-z0-9_][A-Za-z0-9_.:@/+=-]{0,127}$/;
const METHODS = new Set([
  'initialize', 'ping', 'tools/list', 'tools/call', 'resources/list', 'resources/read', 'resources/templates/list',
  'resources/subscribe', 'resources/unsubscribe', 'prompts/list', 'prompts/get', 'completion/complete',
  'logging/setLevel', 'sampling/createMessage', 'elicitation/create', 'roots/list',
  'notifications/initialized', 'notifications/cancelled', 'notifications/progress', 'notifications/message',
  'notifications/tools/list_changed', 'notifications/resources/list_changed', 'notifications/resources/updated',
  'notifications/prompts/list_changed', 'notifications/roots/list_changed', 'notifications/elicitation/complete',
  'tasks/get', 'tasks/result', 'tasks/list', 'tasks/cancel', 'notifications/tasks/status',
]);

let declaredTools: ReadonlySet<string> = new Set();

/** The manifest's tool names: the only tool names telemetry writes in clear. */
export function setDeclaredTools(names: Iterable<string>): void {
  declaredTools = new Set(names);
}

export function isDeclaredTool(name: string): boolean {
  return declaredTools.has(name);
}

/** A tool name as telemetry may carry it: the name when declared, else its digest. */
export function toolField(name: string, declared = isDeclaredTool(name)): { tool: string } | { tool_digest: string } {
  return declared ? { tool: name } : { tool_digest: digestJson(name) }; // as the ledger records it
}

function valid(kind: Kind, v: FieldValue): boolean {
  switch (kind) {
    case 'digest':
      return isDigest(v);
    case 'count':
      return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
    case 'number':
      return typeof v === 'number' && Number.isFinite(v);
    case 'bool':
      return typeof v === 'boolean';
    case 'reason':
      return typeof v === 'string' && REASONS.has(v);
    case 'code':
      return typeof v === 'string' && CODE.test(v);
    case 'label':
      return typeof v === 'string' && LABEL.test(v);
    case 'id':
      return v === null || (typeof v === 'string' && ID.test(v));
    case 'method':
      return typeof v === 'string' && METHODS.has(v);
    case 'tool':
      return typeof v === 'string';
  }
}

/** What sanitize returned: frozen, so a second sanitize (span, then log line) can skip it. */
export type Sanitized = Readonly<{ [name: string]: FieldValue }>;
const SANITIZED = new WeakSet<object>();

/**
 * Keep only allowed fields with valid values. An undeclared tool name becomes `tool_digest`;
 * unknown names and invalid values are dropped and only counted (`dropped`, `redacted`).
 */
export function sanitize(fields: Fields): Sanitized {
  if (SANITIZED.has(fields)) return fields as Sanitized; // already through here, and frozen
  const out: { [name: string]: FieldValue } = {};
  let dropped = 0;
  let redacted = 0;
  for (const name of Object.keys(fields)) {
    const v = fields[name];
    if (v === undefined) continue;
    const kind = Object.prototype.hasOwnProperty.call(KINDS, name) ? KINDS[name] : undefined;
    if (kind === undefined) {
      dropped++;
      continue;
    }
    if (kind === 'tool' && typeof v === 'string') {
      Object.assign(out, toolField(v));
      continue;
    }
    if (!valid(kind, v)) {
      redacted++;
      continue;
    }
    out[name] = v;
  }
  if (dropped) out.dropped = dropped;
  if (redacted) out.redacted = redacted;
  Object.freeze(out);
  SANITIZED.add(out);
  return out;
}

const EVENT = /^[a-z][a-z0-9_.]{0,63}$/;

export function eventName(e: string): string {
  return typeof e === 'string' && EVENT.test(e) ? e : 'invalid_event';
}
