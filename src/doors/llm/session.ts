// One gate session as the LLM door sees it. The model proposes a call; the agent runs it
// in-process and sends its result back in a later request. So the gate's forward() is the
// release of the call to the agent, and the reply it waits for is that result, matched by the
// call's id (ADR 037): the session label rises by the tool's `returns` when the result comes
// back, and the result entry records its digest, exactly as for an MCP call. A call whose
// result never comes back ends `unknown` at --call-timeout; a call allowed but never written
// to the agent (refused response, agent gone) ends `not_forwarded`.
import type { JsonObject, JsonValue } from '../../core/json.js';
import { fingerprintOf } from '../../core/call.js';
import { digestJson, type Digest } from '../../core/digest.js';
import type { RefusalCode } from '../../core/refusal.js';
import type { RefusalData, UpstreamReply } from '../../core/outcome.js';
import { NotForwarded, Unattributed, type Forward } from '../../gate/gate.js';
import type { RelayGate } from '../relay.js';
import { META_APPROVAL } from '../../gate/checks/approval.js';
import { unreadByGate } from './by-reference.js';

/** A call the model proposed, its arguments read strictly. */
export interface ProposedCall {
  id: string;
  tool: string;
  arguments: JsonObject;
}

/** A tool's result the agent sends back (OpenAI `tool` message, Anthropic `tool_result`). */
export interface ToolResult {
  id: string;
  content: JsonValue;
  isError: boolean;
  /** The tool the request's own record of the call names (the assistant's call under `id`), if any. */
  tool?: string;
}

/** The gate as this door's session sees it: the relay's view, and a tool's output outside a released call. */
export type LlmGate = RelayGate & {
  /** Re-read the manifest and policy files when they changed (recorded, as before a decision). */
  refreshRules(): Promise<void>;
  /** The digest of the manifest in force: the rules a result was read under. */
  rulesDigest(): Digest;
  observeToolOutput(tool: string, output: JsonValue): void;
  /** A tool's output the gate cannot read (given by reference): raised as the worst a classify rule could find. */
  observeUnreadOutput(output: JsonValue): void;
};

export type Verdict = { release: true; withdraw: () => void } | { release: false; refusal: RefusalData };

interface Waiting {
  resolve: (reply: UpstreamReply) => void;
  reject: (e: Error) => void;
}

/** Released calls waiting for their results, at most this many (the oldest ends unknown). */
const MAX_WAITING = 4096;
/** Results already seen, so a history re-sent with every request is not read again. */
const MAX_SEEN = 8192;

export class LlmSession {
  /** By call id: more than one when the model reused an id before its call's result came back. */
  private readonly waiting = new Map<string, Waiting[]>();
  private waiters = 0;
  /** By result id: the digest of the content last read under it, and of the manifest it was read under. */
  private readonly seen = new Map<string, string>();
  /** The gate's handling of every call not settled yet (shutdown waits for their entries). */
  private readonly handling = new Set<Promise<unknown>>();

  constructor(
    private readonly gate: LlmGate,
    /** The task id calls are fingerprinted under (to match a receipt sent with the request). */
    private readonly taskId: () => string | null,
  ) {}

  /**
   * Decide one proposed call. Resolves `release` as soon as the gate forwards it (allowed, or
   * refused in shadow mode), `release: false` with the refusal otherwise; never rejects.
   * `receipts` are the approval receipts the request carried: the one bound to this call's
   * fingerprint is judged, as params._meta["cloakpipe/approval"] would be.
   */
  decide(call: ProposedCall, receipts: JsonObject[]): Promise<Verdict> {
    const receipt = this.receiptFor(call, receipts);
    const meta: JsonObject = receipt ? { [META_APPROVAL]: receipt } : {};
    return new Promise<Verdict>((resolve) => {
      let released = false;
      const forward: Forward = () =>
        new Promise<UpstreamReply>((ok, fail) => {
          released = true;
          const w = { resolve: ok, reject: fail };
          this.wait(call.id, w);
          const withdraw = () => {
            if (!this.unwait(call.id, w)) return;
            fail(new NotForwarded('the call never reached the agent'));
          };
          resolve({ release: true, withdraw });
        });
      const failClosed = () => resolve({ release: false, refusal: this.gate.failClosedRefusal('the gate could not decide or record this call') });
      const handling = this.gate.handleCall({ tool: call.tool, arguments: call.arguments, meta }, forward);
      this.handling.add(handling);
      void handling.finally(() => this.handling.delete(handling)).catch(() => undefined);
      handling.then(
        (outcome) => {
          if (released) return; // its result (or its timeout) settled it later
          if (outcome.kind === 'refused') resolve({ release: false, refusal: outcome.data });
          else failClosed(); // replayed or otherwise: nothing this door can hand the agent
        },
        () => void (released || failClosed()),
      );
    });
  }

  /**
   * The receipt bound to the call's fingerprint. None when the fingerprint cannot be made (a
   * task context that does not load): the gate then refuses the call fail_closed and records
   * it, where a throw here would have ended the response with no entry.
   */
  private receiptFor(call: ProposedCall, receipts: JsonObject[]): JsonObject | undefined {
    if (receipts.length === 0) return undefined;
    let fingerprint: string;
    try {
      fingerprint = fingerprintOf(call.tool, call.arguments, this.taskId());
    } catch {
      return undefined;
    }
    return receipts.find((r) => r.fingerprint === fingerprint);
  }

  /**
   * Something refused whole, recorded by the digest of its bytes: a call that could not be read
   * (its arguments do not parse), a request or response the door cannot read or let through.
   */
  refuseWhole(code: RefusalCode, detail: string, bytes: Uint8Array): Promise<RefusalData> {
    return this.gate.refuseWire(code, detail, bytes).catch(() => this.gate.failClosedRefusal('the gate could not record this refusal'));
  }

  /**
   * The results a request carries: a released call's result settles it (label, result entry);
   * one the gate never released (sent before it started, or made up) raises the label as that
   * tool's reply would (its `returns` and classification) when the request's record of the call
   * names a declared tool, else by classification, as server output outside a gated call does. A result under an id several
   * open calls share is none's for sure: each ends unknown, its label raised by its own tool.
   * A result seen before is read again only when its content changed: the history an agent
   * sends back is its own to edit, and the label must follow what reaches the model. Or when the
   * manifest changed since it was read: the model reads that history again with this request,
   * so a classify rule (or a `returns`) a reload added applies to it too. The files are re-read
   * first, as before a decision, so a rule written since the last call holds for these results.
   */
  async results(results: ToolResult[]): Promise<void> {
    if (results.length === 0) return;
    await this.gate.refreshRules();
    const rules = this.gate.rulesDigest();
    const settled = new Set<string>();
    for (const r of results) {
      const digest = `${digestJson(r.content)} ${rules}`;
      // What the model API fetches or reads itself, the gate never reads (ADR 103, 114); read once per content.
      if ((this.seen.get(r.id) !== digest || settled.has(r.id)) && unreadByGate(r.content)) this.gate.observeUnreadOutput(r.content);
      const ws = this.waiting.get(r.id);
      if (ws) {
        this.waiting.delete(r.id);
        this.waiters -= ws.length;
        settled.add(r.id);
        const reply = r.isError ? { error: r.content } : { result: r.content };
        if (ws.length === 1) ws[0].resolve(reply);
        else for (const w of ws) w.reject(new Unattributed(reply));
      } else if (this.seen.get(r.id) !== digest || settled.has(r.id)) {
        // Never released, other content under a settled id, or a second result under an id
        // this request already settled. A declared tool's name only: another is model text.
        if (r.tool !== undefined && this.gate.declares(r.tool)) this.gate.observeToolOutput(r.tool, r.content);
        else this.gate.observeServerOutput(r.content);
      }
      this.see(r.id, digest);
    }
  }

  /**
   * The gate is stopping: a released call whose result has not come back ends `unknown` (the
   * agent may have run it); resolves once every call's entries are recorded.
   */
  async end(): Promise<void> {
    for (const ws of this.waiting.values()) for (const w of ws) w.reject(new Error('the gate stopped before the result came back'));
    this.waiting.clear();
    this.waiters = 0;
    await Promise.allSettled([...this.handling]);
  }

  /**
   * A model that reuses an id before the call's result came back: the agent's result under it
   * cannot be told apart, so it ends every call open under that id unknown (a write's result
   * is never recorded as another call's), each raising the label by its own tool's `returns`
   * (a confidential read must not be settled as the weather).
   */
  private wait(id: string, w: Waiting): void {
    const ws = this.waiting.get(id);
    if (ws) ws.push(w);
    else this.waiting.set(id, [w]);
    this.waiters++;
    this.seen.delete(id);
    if (this.waiters > MAX_WAITING) {
      const [oldest, ows] = this.waiting.entries().next().value as [string, Waiting[]];
      const ow = ows[0];
      this.unwait(oldest, ow);
      ow.reject(new Error('too many calls waiting for their results'));
    }
  }

  /** Whether `w` was still waiting under `id` (now it is not). */
  private unwait(id: string, w: Waiting): boolean {
    const ws = this.waiting.get(id);
    const at = ws ? ws.indexOf(w) : -1;
    if (!ws || at < 0) return false;
    ws.splice(at, 1);
    if (ws.length === 0) this.waiting.delete(id);
    this.waiters--;
    return true;
  }

  private see(id: string, digest: string): void {
    this.seen.delete(id);
    this.seen.set(id, digest);
    if (this.seen.size > MAX_SEEN) this.seen.delete(this.seen.keys().next().value as string);
  }
}
