// OpenTelemetry spans per decision, through @opentelemetry/api only, so whatever SDK and
// exporter the operator installs (e.g. `node --import ./otel.js`) receives them. A span carries
// what the ledger's decision entry carries in the clear: declared tool name (else its digest),
// outcome, reason, fingerprint, session label, entry seq and timings; never argument values or
// results. Tracing must not be able to break a call or speak for an exporter: every call into
// the API is guarded, a failure is counted, and OpenTelemetry's own diagnostics (which print
// exporter exception text) are routed to a counter (guardOtelDiagnostics).
import { diag, DiagLogLevel, SpanKind, SpanStatusCode, trace, type Attributes, type DiagLogger } from '@opentelemetry/api';
import type { RefusalCode } from '../core/refusal.js';
import type { Mode } from '../core/outcome.js';
import type { Digest } from '../core/digest.js';
import { sanitize, toolField, type Fields, type Sanitized } from './fields.js';
import { log } from './log.js';

export type DecisionOutcome = 'allow' | 'refuse' | 'would_refuse' | 'replay' | 'unknown';

export interface DecisionTelemetry {
  /** The tool name as called; written only when `declared`, else as its digest. */
  tool: string;
  declared: boolean;
  outcome: DecisionOutcome;
  reason?: RefusalCode;
  fingerprint?: Digest;
  sessionLabel?: string;
  /** Ledger seq of the decision entry. */
  entry?: number | null;
  mode?: Mode;
  /** When the call arrived (ms since the epoch); the span starts there. */
  startTime?: number;
  timings?: { decideMs?: number; commitMs?: number; upstreamMs?: number };
}

export const SPAN_NAME = 'cloakpipe.decision';
const ATTR_PREFIX = 'cloakpipe.';

let failures = 0;

/** How many telemetry operations failed (exporter, processor, diagnostics); never why. */
export function telemetryFailures(): number {
  return failures;
}

function noteFailure(component: 'spans' | 'otel'): void {
  failures++;
  // Say that telemetry is failing, at 1, 10, 100, ... failures: a count, nothing else.
  if (/^10*$/.test(String(failures))) log.warn('telemetry_failure', { component, failures });
}

/** The decision as allow-listed fields (shared by the span and the `decision` log line). */
export function decisionFields(d: DecisionTelemetry): Fields {
  const t = d.timings ?? {};
  // Object.assign, not a literal with a spread first: see Ledger.appendInTx.
  return Object.assign(toolField(d.tool, d.declared) as Fields, {
    outcome: d.outcome,
    reason: d.reason,
    fingerprint: d.fingerprint,
    session_label: d.sessionLabel,
    entry: d.entry ?? undefined,
    mode: d.mode,
    decide_ms: t.decideMs,
    commit_ms: t.commitMs,
    upstream_ms: t.upstreamMs,
  });
}

/** One span per decision, ended at once; `fields`: the decision already sanitized. Never throws. */
export function spanDecision(d: DecisionTelemetry, fields?: Sanitized): void {
  try {
    const attributes: Attributes = {};
    for (const [k, v] of Object.entries(fields ?? sanitize(decisionFields(d)))) if (v !== null) attributes[ATTR_PREFIX + k] = v;
    const span = trace.getTracer('cloakpipe').startSpan(SPAN_NAME, {
      kind: SpanKind.INTERNAL,
      ...(typeof d.startTime === 'number' && Number.isFinite(d.startTime) ? { startTime: d.startTime } : {}),
      attributes,
    });
    // The status carries no message: a code is all a refusal needs, and a message could leak.
    if (d.outcome === 'refuse' || d.outcome === 'unknown') span.setStatus({ code: SpanStatusCode.ERROR });
    span.end();
  } catch {
    noteFailure('spans');
  }
}

const countingLogger: DiagLogger = {
  error: () => noteFailure('otel'),
  warn: () => noteFailure('otel'),
  info: () => undefined,
  debug: () => undefined,
  verbose: () => undefined,
};

/**
 * Route OpenTelemetry's internal diagnostics to a counter. The SDK reports an exporter's
 * failure through diag.error with the exception's text, which may hold what the exporter was
 * given; the gate calls this at start-up, after any `--import` preload installed its logger.
 */
export function guardOtelDiagnostics(): void {
  try {
    diag.setLogger(countingLogger, { logLevel: DiagLogLevel.WARN, suppressOverrideMessage: true });
  } catch {
    failures++;
  }
}
