// Per-call telemetry for the gate: a timer the gate marks as the call moves (decided,
// committed, upstream answered), and one report at the end that becomes the decision span and
// the `decision` log line. It reads only what the ledger entry holds in the clear.
import type { CallOutcome, Mode } from '../core/outcome.js';
import { decisionOutcome } from '../core/entries.js';
import type { Digest } from '../core/digest.js';
import type { RefusalCode } from '../core/refusal.js';
import { decisionFields, spanDecision, type DecisionOutcome, type DecisionTelemetry } from './spans.js';
import { log } from './log.js';
import { sanitize, type Sanitized } from './fields.js';

/** What telemetry reads of a decision: the fields its ledger entry holds in the clear. */
export interface DecisionSummary {
  /** Whether the manifest declares the tool (an undeclared name is never reported). */
  declared: boolean;
  /** The refusal code when a check refused (in shadow mode the call is forwarded anyway). */
  code?: RefusalCode;
  fingerprint: Digest;
  sessionLabel?: string;
}

export class DecisionTimer {
  readonly startTime = Date.now();
  private readonly t0 = performance.now();
  private decidedAt?: number;
  private committedAt?: number;
  private upstreamMs?: number;
  /** The decision, once made (set by the gate). */
  decision?: DecisionSummary;

  decided(d: DecisionSummary): void {
    this.decision = d;
    this.decidedAt = performance.now();
  }

  committed(): void {
    this.committedAt = performance.now();
  }

  /** Wrap the door's forward so the upstream's time is measured. */
  timeUpstream<T>(forward: () => Promise<T>): () => Promise<T> {
    return () => {
      const t = performance.now();
      const done = () => void (this.upstreamMs = round(performance.now() - t));
      return forward().then(
        (v) => (done(), v),
        (e) => {
          done();
          throw e;
        },
      );
    };
  }

  report(tool: string, outcome: CallOutcome, mode: Mode): DecisionTelemetry {
    const d = this.decision;
    // The recorded outcome (core/entries.ts), except a refusal the door writes and a forwarded
    // call whose outcome is unknown.
    const kind: DecisionOutcome =
      outcome.kind === 'unknown' ? 'unknown' : outcome.kind === 'refused' || d === undefined ? 'refuse' : decisionOutcome(d.code === undefined, outcome.kind === 'replayed', mode);
    const reason = outcome.kind === 'refused' ? outcome.data.reason : d?.code;
    return {
      tool,
      declared: d?.declared ?? false,
      outcome: kind,
      reason,
      fingerprint: d?.fingerprint,
      sessionLabel: d?.sessionLabel,
      entry: outcome.kind === 'refused' ? outcome.data.entry : outcome.entry,
      mode,
      startTime: this.startTime,
      timings: {
        decideMs: this.decidedAt !== undefined ? round(this.decidedAt - this.t0) : undefined,
        commitMs: this.committedAt !== undefined && this.decidedAt !== undefined ? round(this.committedAt - this.decidedAt) : undefined,
        upstreamMs: this.upstreamMs,
      },
    };
  }
}

const round = (ms: number) => Math.round(ms * 1000) / 1000;

/**
 * Reports made once the door has written the call's outcome (issue 16): they wait for the next
 * turn, off the call's path, and `flush` makes every one still waiting, so a gate that closes
 * right after its last answer has reported each of its calls before the close resolves.
 */
export class LaterReports {
  private pending: DecisionTelemetry[] = [];

  add(t: DecisionTelemetry): void {
    if (this.pending.push(t) === 1) setImmediate(() => this.flush());
  }

  flush(): void {
    const due = this.pending;
    this.pending = [];
    for (const t of due) reportDecision(t);
  }
}

/** The decision span and the `decision` log line. Never throws. */
export function reportDecision(t: DecisionTelemetry): void {
  let fields: Sanitized;
  try {
    fields = sanitize(decisionFields(t)); // once: the span and the log line share it
  } catch {
    return; // never throws; nothing to report that passed the allow-list
  }
  spanDecision(t, fields);
  log.info('decision', fields);
}
