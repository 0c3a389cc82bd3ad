// The gate: one per gate process (= one MCP session). Doors (stdio proxy, confinement bridge)
// hand it calls; it decides each inside a durable transaction together with the call's effects
// and its ledger entry, and only then lets the door forward. Any error while deciding or
// recording refuses the call `fail_closed`.
import type { LoadedManifest } from '../contract/manifest.js';
import type { ContextSource } from '../contract/context.js';
import type { Ledger } from '../ledger/ledger.js';
import type { EntryFields, LedgerEntry } from '../ledger/entry.js';
import type { Transact } from '../store/ports.js';
import type { JsonObject, JsonValue } from '../core/json.js';
import { digestBytes, digestJson, type Digest } from '../core/digest.js';
import type { DecisionRefusal, RefusalCode } from '../core/refusal.js';
import type { Call } from '../core/call.js';
import { decide, type Decision } from './decide.js';
import { decisionOutcome } from '../core/entries.js';
import type { GateServices } from './services.js';
import type { CallOutcome, Mode, RefusalData, UpstreamReply } from '../core/outcome.js';
export type { CallOutcome, Mode, RefusalData };
import { DecisionTimer, reportDecision } from '../telemetry/decision.js';
import { log } from '../telemetry/log.js';

/** A door's way to reach the tool: resolves with the upstream's reply, rejects when it died. */
export type Forward = () => Promise<UpstreamReply>;

export class UpstreamGone extends Error {}

export interface GateParts {
  manifest: LoadedManifest;
  context: ContextSource;
  ledger: Ledger;
  /** The store's write transaction (group commit): durable when it resolves. */
  commit: { run: Transact };
  services: GateServices;
  callTimeoutMs: number;
  /** Hook for the flow session: the label in force and what a reply does to it. */
  sessionLabel: () => string;
  afterReply?: (call: Call, decision: Decision, reply: UpstreamReply) => EntryFields[];
  /** Hook for the flow session: server output outside a gated call, before the host sees it. */
  serverOutput?: (output: JsonValue) => EntryFields[];
  clock?: () => number;
}

export class Gate {
  private readonly clock: () => number;

  constructor(readonly parts: GateParts) {
    this.clock = parts.clock ?? Date.now;
  }

  get mode(): Mode {
    return this.parts.services.mode;
  }

  private digests() {
    return { manifest_digest: this.parts.manifest.digest, policy_digest: this.parts.services.policy.digest };
  }

  /** Record a refusal made outside decide(); the entry number is null when even that failed. */
  private async recordRefusal(code: RefusalCode, fields: Record<string, string>): Promise<number | null> {
    try {
      const e = await this.parts.commit.run(() =>
        this.parts.ledger.appendInTx({ kind: 'decision', outcome: 'refuse', reason: code, ...fields, ...this.digests() }),
      );
      return e.seq;
    } catch {
      return null; // still refused: nothing was forwarded
    }
  }

  /** Record a wire-level refusal (the message was never forwarded). */
  async refuseWire(code: RefusalCode, detail: string, line: Uint8Array): Promise<RefusalData> {
    const line_digest = digestBytes(line);
    const entry = await this.recordRefusal(code, { line_digest });
    log.info('wire_refusal', { reason: code, entry, line_digest });
    return { reason: code, detail, ...this.digests(), entry };
  }

  /**
   * A server line on its way to the host that is not a gated call's reply (resources/read,
   * prompts/get, notifications, server requests, a line that does not parse). The label rises
   * in memory now, before the door writes the line; its ledger entry follows.
   */
  observeServerOutput(output: JsonValue): void {
    let labels: EntryFields[] = [];
    try {
      labels = this.parts.serverOutput?.(output) ?? [];
    } catch {
      return; // classify cannot fail on a value; nothing to record
    }
    if (labels.length > 0) void this.parts.commit.run(() => labels.forEach((f) => this.parts.ledger.appendInTx(f))).catch(() => undefined);
  }

  /**
   * A tools/list answer on its way to the host: the declared tools' definitions are noted now
   * (a call decided after this sees them) and pinned or recorded as changed durably.
   */
  observeToolList(result: JsonValue): void {
    const pins = this.parts.services.pins;
    if (!pins) return;
    let seen: Map<string, string>;
    try {
      seen = pins.seeList(result);
    } catch {
      return;
    }
    if (seen.size === 0) return;
    void this.parts.commit
      .run(() => pins.recordList(seen, this.clock()).forEach((f) => this.parts.ledger.appendInTx(f)))
      .catch(() => undefined); // not durable: the in-memory view still refuses changed tools
  }

  /** Append an entry on its own (start-up, shutdown, operator actions). */
  record(fields: EntryFields): Promise<LedgerEntry> {
    return this.parts.commit.run(() => this.parts.ledger.appendInTx(fields));
  }

  /** Decide one tools/call, record it durably, and forward it only when allowed. */
  async handleCall(call: Omit<Call, 'taskId'>, forward: Forward): Promise<CallOutcome> {
    const timer = new DecisionTimer();
    const outcome = await this.decideAndForward(call, timer.timeUpstream(forward), timer);
    reportDecision(timer.report(call.tool, outcome, this.mode)); // span + log line; never throws
    return outcome;
  }

  private async decideAndForward(call: Omit<Call, 'taskId'>, forward: Forward, timer: DecisionTimer): Promise<CallOutcome> {
    const { parts } = this;
    let decision: Decision | undefined;
    let recorded: { entry: LedgerEntry; decision: Decision; refused: DecisionRefusal | null; taskCall: Call };
    try {
      recorded = await parts.commit.run(() => {
        const now = this.clock();
        const context = parts.context.get();
        const taskCall: Call = { ...call, taskId: context.taskId };
        const sessionLabel = parts.sessionLabel();
        decision = decide(taskCall, { manifest: parts.manifest, context, services: parts.services, sessionLabel, now });
        timer.decided(decision);
        const v = decision.verdict;
        const outcome = decisionOutcome(v.ok, decision.notes.replay !== undefined, parts.services.mode);
        if (v.ok) for (const effect of decision.notes.onAllow) effect();
        const entry = parts.ledger.appendInTx({
          kind: 'decision',
          outcome,
          // An undeclared tool's name is model-chosen text: only its digest is recorded.
          ...(decision.tool ? { tool: call.tool } : { tool_digest: digestJson(call.tool) }),
          ...(v.ok ? {} : { reason: v.code }),
          fingerprint: decision.fingerprint,
          args_digest: digestJson(call.arguments),
          context_digest: context.digest,
          task: context.taskId,
          session_label: sessionLabel,
          agent: parts.services.agent,
          ...this.digests(),
          ...decision.notes.fields,
        });
        return { entry, decision, refused: v.ok ? null : v.code, taskCall };
      });
      timer.committed();
    } catch {
      // Deciding or recording failed: refuse, and try to leave a trace of the refusal.
      const fingerprint = decision?.fingerprint;
      const entry = await this.recordRefusal('fail_closed', {
        args_digest: digestJson(call.arguments),
        ...(fingerprint ? { fingerprint } : {}),
      });
      const detail = 'the gate could not decide or record this call';
      return { kind: 'refused', data: { reason: 'fail_closed', detail, ...this.digests(), entry, ...(fingerprint ? { fingerprint } : {}) } };
    }
    const { entry, refused, taskCall } = recorded;
    decision = recorded.decision;
    if (refused && this.mode === 'enforce') {
      const v = decision.verdict as { detail: string };
      return { kind: 'refused', data: { reason: refused, detail: v.detail, ...this.digests(), entry: entry.seq, fingerprint: decision.fingerprint } };
    }
    if (!refused && decision.notes.replay !== undefined) {
      // A replayed result reaches the host like a fresh one: the session label rises first.
      const replay = decision.notes.replay;
      const labels = parts.afterReply?.(taskCall, decision, { result: replay }) ?? [];
      if (labels.length > 0) await parts.commit.run(() => labels.forEach((f) => parts.ledger.appendInTx(f))).catch(() => undefined);
      return { kind: 'replayed', result: replay, entry: entry.seq };
    }

    let reply: UpstreamReply;
    try {
      reply = await withTimeout(forward(), parts.callTimeoutMs);
    } catch (e) {
      const why = e instanceof TimeoutError ? 'timeout' : e instanceof UpstreamGone ? 'upstream_exit' : 'error';
      const d = decision;
      await parts.commit
        .run(() => {
          for (const f of d.notes.afterFailure) f(why);
          parts.ledger.appendInTx({ kind: 'result', outcome: 'unknown', why, fingerprint: d.fingerprint, decision: entry.seq });
        })
        .catch(() => undefined);
      return { kind: 'unknown', why, entry: entry.seq, fingerprint: d.fingerprint };
    }
    const d = decision;
    // The session label rises in memory before anything can fail, so a reply that reaches the
    // host has always raised it; only the label entry waits for the transaction below.
    const extra = parts.afterReply?.(taskCall, d, reply) ?? [];
    try {
      await parts.commit.run(() => {
        for (const f of d.notes.afterReply) f(reply);
        parts.ledger.appendInTx({
          kind: 'result',
          outcome: reply.error !== undefined ? 'error' : 'ok',
          fingerprint: d.fingerprint,
          decision: entry.seq,
          result_digest: digestJson(reply.error ?? reply.result ?? null),
        });
        for (const fields of extra) parts.ledger.appendInTx(fields);
      });
    } catch {
      // The tool ran; its settlement could not be recorded. The reply still reaches the host
      // (withholding it would not undo the effect); verify shows the missing result entry.
    }
    return { kind: 'forwarded', reply, entry: entry.seq };
  }
}

class TimeoutError extends Error {}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const t = setTimeout(() => reject(new TimeoutError()), ms);
    p.then(
      (v) => {
        clearTimeout(t);
        resolve(v);
      },
      (e) => {
        clearTimeout(t);
        reject(e);
      },
    );
  });
}

export type { JsonObject };
