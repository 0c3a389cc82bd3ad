// The gate: doors (stdio proxy, confinement bridge, and later HTTP) hand it calls, each with the
// session it belongs to; it decides each inside a durable transaction together with the call's
// effects and its ledger entry, and only then lets the door forward. Any error while deciding
// or recording refuses the call `fail_closed`.
import type { ContextSource, TaskContext } from '../contract/context.js';
import type { Ledger } from '../ledger/ledger.js';
import type { EntryFields, LedgerEntry } from '../ledger/entry.js';
import { decisionOutcome, type SessionEndReason } from '../core/entries.js';
import type { Transact } from '../store/ports.js';
import type { JsonObject, JsonValue } from '../core/json.js';
import { digestBytes, digestJson, type Digest } from '../core/digest.js';
import type { DecisionRefusal, RefusalCode } from '../core/refusal.js';
import type { Call } from '../core/call.js';
import { decide, type Decision } from './decide.js';
import type { GateServices } from './services.js';
import type { GateSession, SessionScope } from './session.js';
import type { AfterReply } from './verdict.js';
import { RulesBroken, type RulesSource } from './rules.js';
import type { CallOutcome, Mode, RefusalData, UnknownWhy, UpstreamReply } from '../core/outcome.js';
export type { CallOutcome, Mode, RefusalData };
import { DecisionTimer, LaterReports } from '../telemetry/decision.js';
import { Unrecorded } from './unrecorded.js';
import { log } from '../telemetry/log.js';

/** A door's way to reach the tool: resolves with the upstream's reply, rejects when it died. */
export type Forward = () => Promise<UpstreamReply>;

export class UpstreamGone extends Error {}
/** A door's forward() rejects with this when the call never reached the tool (the host cancelled it first, the gate is stopping). */
export class NotForwarded extends Error {}
/** A door's forward() rejects with this when the task a call was answered with was cancelled before it finished: it may have partly run. */
export class TaskCancelled extends Error {}
/**
 * A door's forward() rejects with this when a reply came back that may be this call's or
 * another's (the LLM door: an agent's result under an id several open calls share). The label
 * rises as though it were this call's; the outcome is unknown: no result is recorded as its.
 */
export class Unattributed extends Error {
  constructor(readonly reply: UpstreamReply) {
    super('a reply that may be another call\'s');
  }
}

export interface GateParts {
  /** The manifest and policy in force, re-read when their files change. */
  rules: RulesSource;
  context: ContextSource;
  ledger: Ledger;
  /** The store's write transaction (group commit): durable when it resolves. `later` may wait
   *  for the next transaction (a result entry and settlement, ADR 017); `run` when absent. */
  commit: { run: Transact; later?: Transact };
  services: GateServices;
  callTimeoutMs: number;
  /** A new session (flow label, pins view); the gate opens its default one at construction. */
  openSession: (scope?: SessionScope) => GateSession;
  clock?: () => number;
}

export class Gate {
  private readonly clock: () => number;
  /** The session of a door that has one (stdio, confinement): used when a call names none. */
  readonly session: GateSession;

  constructor(readonly parts: GateParts) {
    this.clock = parts.clock ?? Date.now;
    this.session = parts.openSession();
  }

  get mode(): Mode {
    return this.parts.services.mode;
  }

  /** Another session over the same rules, stores and ledger (one per MCP session of a door). */
  openSession(scope?: SessionScope): GateSession {
    return this.parts.openSession(scope);
  }

  /**
   * A door's session begins (the HTTP door: an MCP session): its entry is durable before
   * anything of the session reaches the upstream; a failure to record it rejects (fail closed).
   */
  async openRecordedSession(scope: SessionScope & { digest: Digest }): Promise<GateSession> {
    const session = this.openSession(scope);
    const context = (scope.context ?? this.parts.context).get();
    await this.record({ kind: 'session', action: 'open', session: scope.digest, agent: this.servicesOf(session, context).agent, task: context.taskId, context_digest: context.digest });
    return session;
  }

  /** A door's session ended; recorded, never thrown (nothing is left to refuse). */
  async closeRecordedSession(session: GateSession, reason: SessionEndReason): Promise<void> {
    if (session.scope.digest === undefined) return;
    await this.record({ kind: 'session', action: 'close', session: session.scope.digest, reason }).catch(() => undefined);
  }

  /** The gate as one session sees it: what a relay serving that session calls (the HTTP door
   *  opens a session and a view per MCP session; the stdio door uses the gate's own). */
  view(session: GateSession) {
    return {
      handleCall: (call: Omit<Call, 'taskId'>, forward: Forward) => this.handleCall(call, forward, session),
      refuseWire: (code: RefusalCode, detail: string, line: Uint8Array | { digest: Digest }) => this.refuseWire(code, detail, line, this.whoOf(session)),
      failClosedRefusal: (detail: string) => this.failClosedRefusal(detail),
      observeServerOutput: (output: JsonValue) => this.observeServerOutput(output, session),
      observeToolOutput: (tool: string, output: JsonValue) => this.observeToolOutput(tool, output, session),
      observeUnreadOutput: (output: JsonValue) => void this.appendAll(session.unreadOutput(output)),
      observeToolList: (result: JsonValue) => this.observeToolList(result, session),
      declares: (tool: string) => this.declares(tool),
      refreshRules: () => this.refreshRules().catch(() => undefined), // a failure refuses the next call
      rulesDigest: () => this.parts.rules.lastLoaded.manifest.digest,
    };
  }

  /** The digests of the rules a refusal was made under (the last that loaded). */
  digests(): { manifest_digest: Digest; policy_digest: Digest } {
    const r = this.parts.rules.lastLoaded;
    return { manifest_digest: r.manifest.digest, policy_digest: r.policy.digest };
  }

  /** Append entries (a label rise) in one transaction; one the store cannot take now is kept
   *  and tried again until it can (unrecorded.ts): the rise happened, its entry is not lost. */
  private appendAll(entries: EntryFields[]): void {
    if (entries.length > 0) this.recordKept(() => entries);
  }

  /** The entries `make` returns inside a transaction, appended once, kept and tried again while the store fails. */
  private recordKept(make: () => EntryFields[]): void {
    this.unrecorded.record(
      this.once(() => {
        let first: LedgerEntry | undefined;
        for (const f of make()) {
          const e = this.parts.ledger.appendInTx(f);
          first ??= e;
        }
        return first;
      }),
    );
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

  /** The refusal a door answers with when the gate failed before it could answer otherwise. */
  failClosedRefusal(detail: string): RefusalData {
    return { reason: 'fail_closed', detail, ...this.digests(), entry: null };
  }

  /**
   * Whom a refusal made outside decide() is tied to: a door's session (its digest) and its agent,
   * as its decision entries are. Empty for the gate's own session (stdio), as before.
   */
  whoOf(session: GateSession): Who {
    if (session.scope.digest === undefined) return {};
    let context: TaskContext | undefined;
    try {
      context = (session.scope.context ?? this.parts.context).get();
    } catch {
      // A context that does not load is often why the call is refused: the refusal is still
      // recorded, with the agent the session had before.
    }
    const agent = context ? this.servicesOf(session, context).agent : (session.scope.agent ?? this.sessionServices.get(session)?.agent ?? this.parts.services.agent);
    return { session: session.scope.digest, agent };
  }

  /**
   * The services a session's calls are decided with: the gate's, with the session's own agent
   * (a token's), else, without --agent, the agent the task context names now, so that a context
   * rewritten for another agent is decided as that agent (built again only when it changes).
   */
  private readonly sessionServices = new WeakMap<GateSession, GateServices>();
  private servicesOf(session: GateSession, context: TaskContext): GateServices {
    const base = this.parts.services;
    const named = context.task.agent;
    const agent = session.scope.agent ?? (base.agentFromTask ? (typeof named === 'string' ? named : 'agent') : base.agent);
    if (agent === base.agent) return base;
    let services = this.sessionServices.get(session);
    if (services?.agent !== agent) this.sessionServices.set(session, (services = { ...base, agent }));
    return services;
  }

  /** Whether the manifest declares a tool (a door offers the host only these). */
  declares(tool: string): boolean {
    return Object.prototype.hasOwnProperty.call(this.parts.rules.lastLoaded.manifest.manifest.tools, tool);
  }

  /** Record a wire-level refusal (the message was never forwarded), tied to `who` sent it when known. */
  async refuseWire(code: RefusalCode, detail: string, line: Uint8Array | { digest: Digest }, who: Who = {}): Promise<RefusalData> {
    const line_digest = line instanceof Uint8Array ? digestBytes(line) : line.digest; // a line too large to hold: hashed as it passed
    const entry = await this.recordRefusal(code, { line_digest, ...whoFields(who) });
    log.info('wire_refusal', { reason: code, entry, line_digest });
    return { reason: code, detail, ...this.digests(), entry };
  }

  /**
   * A server line on its way to the host that is not a gated call's reply (resources/read,
   * prompts/get, notifications, server requests, a line that does not parse). The label rises
   * in memory now, before the door writes the line; its ledger entry follows.
   */
  observeServerOutput(output: JsonValue, session: GateSession = this.session): void {
    void this.appendAll(session.serverOutput(output)); // never throws: a labelling error raises to the highest
  }

  /**
   * The output of a declared tool's call that reached the host outside a call the gate
   * forwarded (the LLM door: a result the agent sends back for a call the gate did not release,
   * e.g. before a restart). The label rises as the tool's reply would raise it: its `returns`
   * and classification.
   */
  observeToolOutput(tool: string, output: JsonValue, session: GateSession = this.session): void {
    const decl = this.declares(tool) ? this.parts.rules.lastLoaded.manifest.manifest.tools[tool] : undefined;
    void this.appendAll(decl ? (session.replyEffect(tool, decl)({ result: output }).entries ?? []) : session.serverOutput(output));
  }

  /**
   * A tools/list answer on its way to the host: the declared tools' definitions are noted now
   * (a call decided after this sees them) and pinned or recorded as changed durably. An error
   * while reading it fails closed: the host sees definitions no pin was checked against, so the
   * session's tools are refused from then on (ADR 102's rule, for pins).
   */
  observeToolList(result: JsonValue, session: GateSession = this.session): void {
    const pins = session.pins;
    if (!pins) return;
    let seen: Map<string, string>;
    try {
      seen = pins.seeList(result);
    } catch {
      pins.listingUnread();
      log.warn('tool_list_unread', { reason: 'fail_closed' });
      return;
    }
    if (seen.size === 0) return;
    // Kept while the store fails: a first pin dropped here let a later listing pin a changed definition.
    this.recordKept(() => pins.recordList(seen, this.clock()));
  }

  /** Append an entry on its own (start-up, shutdown, operator actions). */
  record(fields: EntryFields): Promise<LedgerEntry> {
    return this.parts.commit.run(() => this.parts.ledger.appendInTx(fields));
  }

  /** How long a forwarded call waits for the server (--call-timeout). */
  get callTimeoutMs(): number {
    return this.parts.callTimeoutMs;
  }

  /** Calls between arriving and their outcome going back to the door, over every session (ADR 045). */
  private inFlight = 0;
  private readonly reports = new LaterReports();

  /** Report now every decision whose report still waits (the gate is closing). */
  flushReports(): void {
    this.reports.flush();
  }

  /** Outcomes of calls the store could not take when they came, tried again (unrecorded.ts). */
  private readonly unrecorded = new Unrecorded((fn) => this.parts.commit.run(fn));

  /** The gate is closing: a last try to record what the store could not take before. */
  closeUnrecorded(): Promise<void> {
    return this.unrecorded.close();
  }

  /** Decide one tools/call of `session`, record it durably, and forward it only when allowed. */
  async handleCall(call: Omit<Call, 'taskId'>, forward: Forward, session: GateSession = this.session): Promise<CallOutcome> {
    const timer = new DecisionTimer();
    this.inFlight++;
    let outcome: CallOutcome;
    try {
      outcome = await this.decideAndForward(call, timer.timeUpstream(forward), timer, session);
    } finally {
      this.inFlight--;
    }
    // The span and the log line once the door has written the outcome (its write leaves on
    // process.nextTick, before this): they are not on this call's path. Never throws.
    this.reports.add(timer.report(call.tool, outcome, this.mode));
    return outcome;
  }

  private failClosed(call: Omit<Call, 'taskId'>, detail: string, session: GateSession, fingerprint?: Digest): Promise<CallOutcome> {
    // The tool as a decision entry names it: a declared name in clear, any other as its digest.
    const tool: Record<string, string> = this.declares(call.tool) ? { tool: call.tool } : { tool_digest: digestJson(call.tool) };
    return this.recordRefusal('fail_closed', { ...tool, args_digest: digestJson(call.arguments), ...(fingerprint ? { fingerprint } : {}), ...whoFields(this.whoOf(session)) }).then((entry) => ({
      kind: 'refused',
      data: { reason: 'fail_closed', detail, ...this.digests(), entry, ...(fingerprint ? { fingerprint } : {}) },
    }));
  }

  /** The manifest or policy files changed: record the reload before deciding under it. */
  private async refreshRules(): Promise<void> {
    const { rules, context, commit, ledger } = this.parts;
    const change = rules.refresh(() => context.get().task);
    if (!change) return;
    await commit.run(() => ledger.appendInTx(change));
    rules.recorded(change);
  }

  private async decideAndForward(call: Omit<Call, 'taskId'>, forward: Forward, timer: DecisionTimer, session: GateSession): Promise<CallOutcome> {
    const { parts } = this;
    try {
      await this.refreshRules();
      parts.rules.current();
    } catch (e) {
      return this.failClosed(call, e instanceof RulesBroken ? e.message : 'the gate could not decide or record this call', session);
    }
    let decision: Decision | undefined;
    /** The decision entry of the last run: its seq, should that run have committed unanswered. */
    let appended: LedgerEntry | undefined;
    let recorded: { entry: LedgerEntry; decision: Decision; refused: DecisionRefusal | null };
    try {
      recorded = await parts.commit.run(() => {
        const now = this.clock();
        const { scope } = session;
        const context = (scope.context ?? parts.context).get();
        const services = this.servicesOf(session, context);
        const rules = parts.rules.current();
        const taskCall: Call = Object.assign({}, call, { taskId: context.taskId }); // not a spread: see ledger.appendInTx
        decision = decide(taskCall, { manifest: rules.manifest, policy: rules.policy, context, services, session, now });
        const v = decision.verdict;
        const sessionLabel = typeof decision.notes.fields.session_label === 'string' ? decision.notes.fields.session_label : session.label;
        timer.decided({ declared: decision.tool !== undefined, code: v.ok ? undefined : v.code, fingerprint: decision.fingerprint, sessionLabel });
        const outcome = decisionOutcome(v.ok, decision.notes.replay !== undefined, parts.services.mode);
        if (v.ok) for (const effect of decision.notes.onAllow) effect();
        // Built member by member (the same members in the same order as a literal with spreads,
        // which V8 builds slowly: see ledger.appendInTx).
        const fields: Record<string, JsonValue | undefined> = { kind: 'decision', outcome };
        // An undeclared tool's name is model-chosen text: only its digest is recorded.
        if (decision.tool) fields.tool = call.tool;
        else fields.tool_digest = digestJson(call.tool);
        if (!v.ok) fields.reason = v.code;
        fields.fingerprint = decision.fingerprint;
        fields.args_digest = decision.argsDigest;
        fields.context_digest = context.digest;
        fields.task = context.taskId;
        fields.session_label = session.label;
        fields.agent = services.agent;
        if (scope.digest) fields.session = scope.digest;
        if (scope.execution) fields.execution = scope.execution;
        fields.manifest_digest = rules.manifest.digest;
        fields.policy_digest = rules.policy.digest;
        const entry = (appended = parts.ledger.appendInTx(Object.assign(fields, decision.notes.fields) as EntryFields));
        if (outcome === 'refuse') for (const effect of decision.notes.onRefuse) effect(entry.seq);
        return { entry, decision, refused: v.ok ? null : v.code };
      });
      timer.committed();
    } catch {
      // Deciding or recording failed: refuse, and try to leave a trace of the refusal.
      if (decision && appended) this.notRecorded(decision, appended);
      return this.failClosed(call, 'the gate could not decide or record this call', session, decision?.fingerprint);
    }
    const { entry, refused } = recorded;
    const d = recorded.decision;
    if (refused && this.mode === 'enforce') {
      const v = d.verdict as { detail: string };
      return { kind: 'refused', data: { reason: refused, detail: v.detail, ...this.digests(), entry: entry.seq, fingerprint: d.fingerprint } };
    }
    if (!refused && d.notes.replay !== undefined) {
      // A replayed result reaches the host like a fresh one: what it does to the session first.
      const replay = d.notes.replay;
      void this.settle(d, session, call.tool, { result: replay }, null);
      return { kind: 'replayed', result: replay, entry: entry.seq };
    }

    let reply: UpstreamReply;
    try {
      reply = await withTimeout(forward(), parts.callTimeoutMs);
    } catch (e) {
      if (e instanceof NotForwarded) return this.notForwarded(d, entry.seq);
      const why: UnknownWhy =
        e instanceof TimeoutError ? 'timeout' : e instanceof UpstreamGone ? 'upstream_exit' : e instanceof TaskCancelled ? 'cancelled' : e instanceof Unattributed ? 'unattributed' : 'error';
      // What reached the host raises the label now, as a reply would, though it is not recorded as
      // this call's. A call that timed out may still bring its output to the host (a task's result,
      // fetched later, is server output then): the tool's `returns` applies now, as if it had.
      const label = e instanceof Unattributed ? this.replyLabel(session, call.tool, d, e.reply) : why === 'timeout' ? this.replyLabel(session, call.tool, d, { result: null }) : undefined;
      await this.recordUnknown(d, why, entry.seq, label);
      return { kind: 'unknown', why, entry: entry.seq, fingerprint: d.fingerprint };
    }
    // The reply goes to the host now; the result entry and the settlement commit with the next
    // group (ADR 017). A crash before that leaves the operation pending, which start-up turns
    // unknown: never run twice, never a result the record contradicts.
    void this.settle(d, session, call.tool, reply, entry.seq);
    return { kind: 'forwarded', reply, entry: entry.seq };
  }

  /**
   * The one after-reply path, for a forwarded reply and a replayed result alike: every effect is
   * computed first, synchronously (the session label rises in memory before the reply is
   * written), then applied with its entries and the result entry (`decision` set: a forwarded
   * call) in one transaction that commits with the next group (ADR 017). Never rejects.
   */
  private async settle(d: Decision, session: GateSession, tool: string, reply: UpstreamReply, decision: number | null): Promise<void> {
    const now = this.clock();
    const { ledger } = this.parts;
    // What the answer does to the session comes first: the label rises before anything else can fail.
    const label = this.replyLabel(session, tool, d, reply);
    let after: AfterReply[];
    try {
      after = [label, ...d.notes.afterReply.map((f) => f(reply, now))];
    } catch {
      // Working out what the reply does to the call's operation failed: its outcome is unknown
      // (a write is reconciled, never run again unasked), recorded with the label's rise.
      log.warn('settle_failed', { reason: 'fail_closed', fingerprint: d.fingerprint });
      return this.recordUnknown(d, 'error', decision, label);
    }
    const ts = ledger.timestamp(); // the reply's arrival, not the later group's turn
    // Built once the reply is on its way (the digest is not on the call's path); the door does
    // not change the reply it writes, so the digest is of what the host was sent.
    let result: EntryFields | undefined;
    const resultEntry = (seq: number): EntryFields =>
      (result ??= { kind: 'result', outcome: reply.error !== undefined ? 'error' : 'ok', fingerprint: d.fingerprint, decision: seq, result_digest: digestJson(reply.error ?? reply.result ?? null) });
    // The last call in flight: once its reply is written and no other call came, its result
    // entry (the first the next group appends) is sealed before the next call is read (ADR 045).
    let appended = false;
    if (decision !== null && this.inFlight === 1)
      setImmediate(() => {
        if (appended || this.inFlight !== 0) return;
        try {
          ledger.preseal(resultEntry(decision), ts);
        } catch {
          // nothing sealed ahead: the group seals the entry (and meets the same failure there)
        }
      });
    const commit = this.parts.commit.later ?? this.parts.commit.run;
    const job = this.once(() => {
      for (const a of after) a.effect?.();
      appended = true;
      let first = decision !== null ? ledger.appendInTx(resultEntry(decision), ts) : undefined;
      for (const a of after)
        for (const fields of a.entries ?? []) {
          const e = ledger.appendInTx(fields);
          first ??= e;
        }
      return first;
    });
    try {
      await commit(job);
    } catch {
      // The tool ran; its settlement could not be recorded now. The reply still reaches the host
      // (withholding it would not undo the effect); the settlement is recorded once the store
      // takes it again. What it holds is about the reply's size (measured only on this path).
      this.unrecorded.keep(job, Buffer.byteLength(JSON.stringify(reply)));
    }
  }

  /**
   * What a reply does to the session label. Never throws (a throw in settle() was a rejection
   * left unhandled, which ended the gate with the outcome unrecorded): an error takes the
   * session to its highest label, as for the most sensitive output there is (ADR 102).
   */
  private replyLabel(session: GateSession, tool: string, d: Decision, reply: UpstreamReply): AfterReply {
    try {
      return session.replyEffect(tool, d.tool)(reply);
    } catch {
      log.warn('reply_unlabelled', { reason: 'fail_closed', fingerprint: d.fingerprint });
      return { entries: session.unreadReply(tool, reply) };
    }
  }

  /**
   * A call's outcome is unknown (`why`): its checks' failure hooks (a write's operation becomes
   * unknown, to reconcile), the result entry of its decision (null: a replay, none) and what
   * reached the host did to the label, in one transaction, kept while the store fails.
   */
  private async recordUnknown(d: Decision, why: UnknownWhy, decision: number | null, label: AfterReply | undefined): Promise<void> {
    const job = this.once(() => {
      const now = this.clock();
      for (const f of d.notes.afterFailure) f(why, now);
      label?.effect?.();
      let first = decision !== null ? this.parts.ledger.appendInTx({ kind: 'result', outcome: 'unknown', why, fingerprint: d.fingerprint, decision }) : undefined;
      for (const fields of label?.entries ?? []) {
        const e = this.parts.ledger.appendInTx(fields);
        first ??= e;
      }
      return first;
    });
    await this.parts.commit.run(job).catch(() => this.unrecorded.keep(job));
  }

  /**
   * An outcome's transaction (`job` returns the first entry it appends), tried again while its
   * store fails: a try after one whose COMMIT landed unanswered finds that entry in the chain and
   * does nothing, so a call never gets a second result entry. Its effects need no such guard:
   * settling an attempt no longer pending changes nothing.
   */
  private once(job: () => LedgerEntry | undefined): () => void {
    let last: LedgerEntry | undefined;
    return () => {
      if (last !== undefined && this.parts.ledger.holds(last)) return;
      last = job();
    };
  }

  /**
   * A decision whose transaction failed, refused fail_closed, whose COMMIT may have landed
   * unanswered all the same: if the chain holds its very entry, what its transaction left (a
   * pending operation) is settled as not run, with a not_forwarded result entry for it, once the
   * store takes it. The call was refused, so it never reached the tool: a retry may run it. An
   * entry not in the chain committed nothing: whatever is pending then is another decision's.
   */
  private notRecorded(d: Decision, entry: LedgerEntry): void {
    const hooks = d.notes.notRecorded;
    if (hooks.length === 0) return;
    const seq = entry.seq;
    this.unrecorded.record(() => {
      if (!this.parts.ledger.holds(entry)) return;
      const now = this.clock();
      const changed = hooks.map((f) => f(now)).some(Boolean);
      if (changed) this.parts.ledger.appendInTx({ kind: 'result', outcome: 'not_forwarded', fingerprint: d.fingerprint, decision: seq });
    });
  }

  /** Allowed, then withdrawn before it reached the tool: nothing ran, so a write may be retried.
   *  Only the checks' not-forwarded hooks run: nothing came back, so the label does not move. */
  private async notForwarded(d: Decision, decision: number): Promise<CallOutcome> {
    const after = d.notes.notForwarded.map((f) => f(this.clock()));
    const job = this.once(() => {
      for (const a of after) a.effect?.();
      const first = this.parts.ledger.appendInTx({ kind: 'result', outcome: 'not_forwarded', fingerprint: d.fingerprint, decision });
      for (const a of after) for (const fields of a.entries ?? []) this.parts.ledger.appendInTx(fields);
      return first;
    });
    await this.parts.commit.run(job).catch(() => this.unrecorded.keep(job));
    return { kind: 'not_forwarded', entry: decision };
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

/** A door's session and agent, when a refusal is known to come from them. */
export interface Who {
  session?: Digest;
  agent?: string;
}

function whoFields(who: Who): Record<string, string> {
  const out: Record<string, string> = {};
  if (who.session !== undefined) out.session = who.session;
  if (who.agent !== undefined) out.agent = who.agent;
  return out;
}
