// Per-call telemetry for the gate: a timer the gate marks as the call moves (decided,
// committed, upstream answered), and one report at the end that becomes the decision span and
// the `decision` log line. It reads only what the ledger entry holds in the clear.
import { decisionOutcome } from '../core/entries.js';
import type { Decision } from '../gate/decide.js';
import type { CallOutcome, Mode } from '../core/outcome.js';
import { decisionFields, spanDecision, type DecisionOutcome, type DecisionTelemetry } from './spans.js';
import { log } from './log.js';

export class DecisionTimer {
  readonly startTime = Date.now();
  private readonly t0 = performance.now();
  private decidedAt?: number;
  private committedAt?: number;
  private upstreamMs?: number;
  /** The decision, once made (set by the gate). */
  decision?: Decision;

  decided(d: Decision): void {
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
    // The recorded outcome (core/entries.ts), except a call that never got a decision (a refusal
    // before or instead of deciding) and one whose forwarded outcome is unknown.
    const kind: DecisionOutcome =
      outcome.kind === 'unknown' ? 'unknown' : outcome.kind === 'refused' || d === undefined ? 'refuse' : decisionOutcome(d.verdict.ok, d.notes.replay !== undefined, mode);
    const reason = outcome.kind === 'refused' ? outcome.data.reason : d && !d.verdict.ok ? d.verdict.code : undefined;
    const label = d?.notes.fields.session_label;
    return {
      tool,
      declared: d?.tool !== undefined,
      outcome: kind,
      reason,
      fingerprint: d?.fingerprint,
      sessionLabel: typeof label === 'string' ? label : undefined,
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

/** The decision span and the `decision` log line. Never throws. */
export function reportDecision(t: DecisionTelemetry): void {
  spanDecision(t);
  log.info('decision', decisionFields(t));
}
