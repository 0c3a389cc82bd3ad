// The relay: one MCP session between a host transport and an upstream transport, whatever the
// door. It owns what every door would otherwise copy: strict parsing both ways, matching
// replies to requests, ids the gate gave up on and id reuse, the tools/call params shape,
// tools/list observation (pins) and filtering, cancellation, calls answered with a task (settled
// by the task's result, or unknown when the task is cancelled: ADRs 049, 050), backpressure
// (requests in flight, each bounded in time: ADR 053, and apart from them calls sent with a
// task: ADR 051) and the session's end.
// A task that fails on its own, or completed when the host left, has its result fetched by the
// gate (ADRs 052, 054).
// One relay per session; it keeps no global state, so one process may hold many (HTTP door).
//
// Guards, host side: a frame that fails strict parsing is refused and never forwarded; a
// tools/call notification (no id) is refused and recorded, since servers may run notifications.
// Upstream side (product.md 7a): the host only ever sees the RFC 8785 form of a message the
// strict parser read, so the host, the ledger and the labels see one value; a reply to an id
// that is not waiting (made up, or a second reply) is dropped and logged by digest, never
// forwarded; so is an unreadable line, and the call it should have answered ends as on the
// upstream's death (outcome unknown at --call-timeout). A request the gate stops waiting for
// is cancelled at the server, as MCP asks of a sender that times a request out (ADR 056).
import { decodeLine, encodeMessage, WireError, type RpcId, type RpcMessage } from '../wire/message.js';
import { randomUUID } from 'node:crypto';
import { idBytes, isRpcId, MAX_ID_BYTES } from '../wire/jsonrpc.js';
import { scanId } from '../wire/id-scan.js';
import { isJsonObject, type JsonObject, type JsonValue } from '../core/json.js';
import { digestBytes, type Digest } from '../core/digest.js';
import type { Call } from '../core/call.js';
import type { RefusalCode } from '../core/refusal.js';
import { outcomeOf, type CallOutcome, type RefusalData, type UpstreamReply } from '../core/outcome.js';
import { NotForwarded, TaskCancelled, UpstreamGone, type Forward } from '../gate/gate.js';
import { log } from '../telemetry/log.js';
import type { InboundFrame, RequestLost, Transport, TransportClosed } from './transport.js';
import { DEFAULT_MAX_IN_FLIGHT, DEFAULT_REQUEST_TIMEOUT_MS } from './limits.js';
import { readCallParams } from './call-params.js';
import { filterToolList } from './tool-list.js';
import { notForwardedResponse, refusalResponse, unknownOutcomeResponse, upstreamGoneResponse, upstreamLostResponse, upstreamSilentResponse } from './responses.js';

/** What the relay needs from the gate: the gate itself (its default session) or gate.view(session). */
export interface RelayGate {
  handleCall(call: Omit<Call, 'taskId'>, forward: Forward): Promise<CallOutcome>;
  /** `line`: the refused message's bytes, or the digest of one too large to hold. */
  refuseWire(code: RefusalCode, detail: string, line: Uint8Array | { digest: Digest }): Promise<RefusalData>;
  /** The refusal for a call the gate failed on before it could answer otherwise. */
  failClosedRefusal(detail: string): RefusalData;
  observeServerOutput(output: JsonValue): void;
  observeToolList(result: JsonValue): void;
  /** Whether the manifest declares a tool (tools/list filtering). */
  declares(tool: string): boolean;
}

/** How long a stop waits for calls in flight before it stops the upstream (product.md 7a). */
export const STOP_GRACE_MS = 5000;

export interface RelayOptions {
  gate: RelayGate;
  host: Transport;
  upstream: Transport;
  /** The host's largest accepted message, in bytes. */
  maxLineBytes: number;
  /** Requests in flight past which the relay stops reading the host (default 256). */
  maxInFlight?: number;
  /** How long a host request that is not a tools/call waits for the server (--call-timeout; default 60 s). */
  requestTimeoutMs?: number;
  /** Pass the server's whole tools/list, undeclared tools included. */
  listUndeclared?: boolean;
}

/** A host request forwarded (or being decided) and not yet answered. */
interface Pending {
  id: RpcId;
  method: string;
  /** The upstream was sent the request (a cancellation is passed on only then). */
  forwarded: boolean;
  /** The host cancelled it, or the gate sent it itself: nothing more is written to the host for this id. */
  cancelled: boolean;
  /** For a tools/call: the gate's forward() waiting for the upstream's reply. */
  waiter?: { resolve: (reply: UpstreamReply) => void; reject: (e: Error) => void };
  /** A tools/call sent with a task (MCP 2025-11-25): its reply may be a task, its result later. */
  task?: boolean;
  /** The task this call's reply created: the host was sent it; the result settles the call. */
  created?: string;
  /** A tasks/result request: the task whose result it asks for. */
  resultOf?: string;
  /** A tasks/cancel request: the task it asks the server to cancel. */
  cancels?: string;
  /** A call answered with a task that the host asked to cancel: only a success settles it. */
  cancelAsked?: boolean;
  /**
   * A request the gate sent itself: a tasks/result for a task that failed or a completed one the
   * host left (ADRs 052, 054), a tasks/cancel for a task named after the gate gave up (ADR 056).
   */
  byGate?: boolean;
  /** A call waiting on its task: the last status the server gave the task. */
  status?: string;
  /** For a host request that is not a call: when it stops waiting for the server. */
  timer?: NodeJS.Timeout;
  /** The request's progress token (its key), when the host asked for progress. */
  progress?: string;
  /** A call decided and waiting for a place at the server (ADR 109): `go` sends it if it may still go; else it is refused, never sent. */
  held?: (go: boolean) => void;
}

const idKey = (id: RpcId) => JSON.stringify(id);
/** What a line must hold to be worth parsing ahead of its turn (an escaped key is parsed in its turn). */
const URGENT_MARKS = ['notifications/cancelled', '"result"', '"error"'].map((m) => Buffer.from(m));
const NO_LINE = new Uint8Array();
/**
 * Ids given up on that a session remembers (ADR 056): past it the oldest is forgotten, so a
 * server that never answers cannot grow the gate's memory without end. Each one was cancelled
 * at the server, which should then never answer it.
 */
export const MAX_ABANDONED_IDS = 4096;
const GAVE_UP = 'cloakpipe: no answer within --call-timeout';
/**
 * How an id given up on is remembered: a long one (a host's id may fill a 4 MiB line) by its
 * digest, so the MAX_ABANDONED_IDS remembered stay small. A digest is no JSON id's key.
 */
const REMEMBERED_KEY_CHARS = 128;
const remembered = (key: string) => (key.length > REMEMBERED_KEY_CHARS ? digestBytes(key) : key);

export class Relay {
  private readonly gate: RelayGate;
  private readonly host: Transport;
  private readonly upstream: Transport;
  private readonly maxInFlight: number;
  private readonly pending = new Map<string, Pending>();
  // Requests the gate gave up on (timeout) that the server may still answer: a late answer must
  // not reach the host after it was told the outcome is unknown, nor match a reused id. The
  // MAX_ABANDONED_IDS newest, oldest first; true for a call sent with a task.
  private readonly abandoned = new Map<string, boolean>();
  // Gated calls answered with a task (by task id): the gate's forward() waits for the result
  // a later tasks/result brings, so the call's record is its outcome, not the task's creation.
  private readonly taskCalls = new Map<string, Pending>();
  // Stored results replayed to a call sent with a task, as tasks the gate made (by task id): a
  // host that asked for a task gets one, and its tasks/get and tasks/result are answered here.
  private readonly replays = new Map<string, { task: JsonObject; result: JsonValue }>();
  // Calls sent with a task, from arrival until they settle. One waiting on its task holds no
  // request in flight (the host must still be read, to send its tasks/result), so they have a
  // bound of their own, of the same size: past it a new one is refused, never queued (ADR 051).
  private readonly withTask = new Set<Pending>();
  private readonly tasks = new Set<Promise<void>>();
  // Calls the host cancelled after the server was sent them, or the gate gave up on at
  // --call-timeout (ADR 122), not yet answered: the server may
  // still run them (MCP lets it leave them unanswered), so each keeps a place at the server until
  // its late answer or --call-timeout. With the calls in flight they are at most twice
  // --max-in-flight; past it a new call waits before the server (held), so call+cancel cannot
  // pile work on it without end (ADR 109).
  private readonly cancelledAtServer = new Map<string, NodeJS.Timeout>();
  private readonly held: Pending[] = [];
  private refusing = 0; // wire refusals being recorded (they hold a line's worth of state)
  private hostPaused = false;
  /** The upstream is not reading what it was sent: the host is not read meanwhile. */
  private upstreamFull = false;
  /** The host is not reading what it was sent: neither the upstream nor the host is read meanwhile. */
  private hostFull = false;
  private upstreamPaused = false;
  private hostEnded = false;
  private stopping = false;
  private upstreamExit: TransportClosed | null = null;
  private finish!: (code: number) => void;
  private fail!: (e: Error) => void;
  /** The session's exit status once the host, the upstream or stop() ended it; rejects with the upstream's start error. */
  readonly done = new Promise<number>((resolve, reject) => ((this.finish = resolve), (this.fail = reject)));

  constructor(private readonly opts: RelayOptions) {
    this.gate = opts.gate;
    this.host = opts.host;
    this.upstream = opts.upstream;
    this.maxInFlight = opts.maxInFlight ?? DEFAULT_MAX_IN_FLIGHT;
    this.host.onframe = (f) => this.fromHost(f);
    this.host.onurgent = (bytes) => this.urgent(bytes);
    this.host.onclose = () => {
      this.hostEnded = true;
      this.releaseHeld();
      this.abandonTasks();
      void this.shutdown();
    };
    this.upstream.onframe = (f) => this.fromUpstream(f);
    this.upstream.onclose = (info) => this.upstreamGone(info);
    this.upstream.onlost = (id, lost) => this.requestLost(id, lost);
    this.upstream.onfull = (full) => {
      this.upstreamFull = full;
      this.flow();
    };
    this.host.onfull = (full) => {
      this.hostFull = full;
      this.flow();
    };
  }

  /** Start the upstream, then the host; resolves with the exit status when the session ends. */
  async run(): Promise<number> {
    await this.upstream.start();
    await this.host.start();
    return this.done;
  }

  /**
   * End the session (SIGTERM, SIGINT): read nothing more from the host, let calls in flight
   * finish for up to graceMs, then stop the upstream. `done` resolves with 0 once it is gone.
   */
  async stop(graceMs = STOP_GRACE_MS): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    void this.host.close();
    this.abandonTasks();
    this.releaseHeld();
    const drained = this.drain();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([drained, new Promise<void>((r) => (timer = setTimeout(r, graceMs)))]);
    clearTimeout(timer);
    if (this.upstreamExit === null) void this.upstream.close();
  }

  /**
   * Stop the upstream now (a door's shutdown grace is over): the calls still running end as on
   * its death, outcome unknown, and the host, still open, is told so.
   */
  stopUpstream(): void {
    if (this.upstreamExit === null) void this.upstream.close();
  }

  /** Requests and refusals in flight (the bound of --max-in-flight). */
  get inFlight(): number {
    return this.pending.size + this.refusing;
  }

  // ── backpressure ─────────────────────────────────────────────────────────────────────────

  private track(task: Promise<void>): void {
    this.tasks.add(task);
    void task.finally(() => {
      this.tasks.delete(task);
      this.flow();
    });
  }

  /**
   * Pause the host at the bound (or while either peer reads nothing), resume it below; pause the
   * upstream while the host reads nothing (its notifications and server requests have no bound).
   */
  private flow(): void {
    if (this.hostFull !== this.upstreamPaused) {
      this.upstreamPaused = this.hostFull;
      if (this.hostFull) this.upstream.pause?.();
      else this.upstream.resume?.();
    }
    if (this.stopping) return;
    const full = this.inFlight >= this.maxInFlight || this.upstreamFull || this.hostFull;
    if (full && !this.hostPaused) {
      this.hostPaused = true;
      this.host.pause?.();
    } else if (!full && this.hostPaused) {
      this.hostPaused = false;
      this.host.resume?.();
    }
  }

  private settle(key: string, entry: Pending): void {
    if (this.pending.get(key) === entry) this.pending.delete(key);
    this.withTask.delete(entry);
    if (entry.created !== undefined && this.taskCalls.get(entry.created) === entry) this.taskCalls.delete(entry.created);
    // The gate's own fetch for a call that ended otherwise (timeout): its answer may come late,
    // and is then dropped; it no longer holds a request in flight.
    if (entry.created !== undefined) for (const [k, p] of this.pending) if (p.byGate && p.resultOf === entry.created) this.giveUp(k, p, true);
    if (entry.held) this.unhold(entry);
    if (this.held.length > 0) this.sendHeld();
    this.flow();
  }

  /**
   * A request that is not a call, no longer waited for: its place is free, a late answer is
   * dropped. `tellServer` when the gate gave up (not the host, whose cancel was passed on).
   */
  private giveUp(key: string, entry: Pending, tellServer: boolean): void {
    clearTimeout(entry.timer);
    this.pending.delete(key);
    this.abandon(key, false);
    if (tellServer) this.cancelAtServer(entry.id);
    this.flow();
  }

  private abandon(key: string, task: boolean): void {
    const k = remembered(key);
    this.abandoned.delete(k); // re-added as the newest
    this.abandoned.set(k, task);
    if (this.abandoned.size > MAX_ABANDONED_IDS) this.abandoned.delete(this.abandoned.keys().next().value as string);
  }

  /**
   * MCP's sender that times a request out "SHOULD issue a cancellation notification for that
   * request and stop waiting": without it the server goes on running a tool whose outcome the
   * host was told is unknown, and may answer an id the host can no longer use.
   */
  private cancelAtServer(id: RpcId): void {
    if (this.upstreamExit) return;
    this.toUpstream({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, reason: GAVE_UP } });
    this.upstream.forget?.(id);
  }

  /**
   * A host request (not a call) the server left unanswered for --call-timeout: it ends as on the
   * upstream's death, so that a server that never answers cannot hold --max-in-flight places
   * and stop the gate reading the host for good.
   */
  private unanswered(key: string, entry: Pending): void {
    if (this.pending.get(key) !== entry) return;
    log.warn('request_unanswered', { method: entry.method });
    this.giveUp(key, entry, !entry.cancelled);
    if (!entry.cancelled) this.write(upstreamSilentResponse(entry.id));
  }

  /**
   * The host can no longer fetch a task's result (it ended, or the session is stopping): each
   * gated call waiting on one ends outcome unknown, unless a tasks/result for it is in flight,
   * or the server said its task completed: the gate fetches that result, so the record is the
   * outcome the server holds (ADR 054).
   */
  private abandonTasks(): void {
    const fetching = new Set([...this.pending.values()].map((p) => p.resultOf));
    for (const [taskId, call] of this.taskCalls) {
      if (fetching.has(taskId)) continue;
      if (call.status === 'completed' && !this.upstreamExit) {
        this.fetchResult(taskId);
        continue;
      }
      this.taskCalls.delete(taskId);
      call.waiter?.reject(new Error('the host ended before it fetched the task result'));
    }
  }

  /** Whether a progress notification names the token of a request the server still has. */
  private inProgress(params: JsonValue | undefined): boolean {
    const key = progressKey(params);
    if (key === undefined) return false;
    for (const p of this.pending.values()) if (p.progress === key && p.forwarded && !p.cancelled) return true;
    for (const p of this.taskCalls.values()) if (p.progress === key && !p.cancelled) return true; // a task's lasts its life
    return false;
  }

  private busy(key: string): boolean {
    return this.pending.has(key) || this.abandoned.has(remembered(key));
  }

  private write(msg: JsonObject): void {
    this.host.send(encodeMessage(msg).slice(0, -1));
  }

  private toUpstream(msg: JsonObject): void {
    this.upstream.send(encodeMessage(msg).slice(0, -1));
  }

  // ── host → upstream ──────────────────────────────────────────────────────────────────────

  private fromHost(frame: InboundFrame): void {
    if (frame.kind === 'oversize') return this.refuse('frame_too_large', `line longer than ${frame.limit} bytes`, frame.id, { digest: frame.digest });
    const line = frame.bytes;
    // MCP's stdio messages end with a newline; the SDK's server never reads a last line without
    // one (the host died mid-write): the gate does not run it either.
    if (frame.unterminated) return this.refuse('malformed_json', 'the last line ended without a newline: an incomplete message', scanId(line), line);
    let msg: RpcMessage;
    try {
      msg = decodeLine(line, { maxLineBytes: this.opts.maxLineBytes });
    } catch (e) {
      if (!(e instanceof WireError)) throw e;
      return this.refuse(e.code, e.detail, scanId(line), line);
    }
    // An id the gate would hold (and may remember) for the request's life: bounded (ADR 108),
    // and not echoed back, as a scan of a refused line does not echo one of that size.
    if (msg.kind === 'request' && idBytes(msg.id) > MAX_ID_BYTES) return this.refuse('invalid_request', `the id is longer than ${MAX_ID_BYTES} bytes`, null, line);
    if (msg.kind === 'request' && msg.method === 'tools/call') return this.handleCall(msg, line);
    // No id to answer: refused and recorded, never forwarded.
    if (msg.kind === 'notification' && msg.method === 'tools/call')
      return this.refuse('invalid_request', 'a tools/call must be a request (it has no id)', undefined, line);
    if (msg.kind === 'notification' && msg.method === 'notifications/cancelled' && this.cancel(msg.params)) return;
    if (msg.kind === 'request' && this.answerReplay(msg)) return;
    if (msg.kind === 'request') {
      const key = idKey(msg.id);
      if (this.busy(key)) return this.refuse('invalid_request', 'a request with this id is already in flight', msg.id, line);
      if (this.upstreamExit) return this.write(upstreamGoneResponse(msg.id));
      const entry: Pending = { id: msg.id, method: msg.method, forwarded: true, cancelled: false, progress: progressKey(metaOf(msg.params)) };
      const taskId = msg.method === 'tasks/result' || msg.method === 'tasks/cancel' ? taskIdOf(msg.params as JsonValue | undefined) : undefined;
      if (taskId !== undefined && msg.method === 'tasks/result') entry.resultOf = taskId;
      if (taskId !== undefined && msg.method === 'tasks/cancel') {
        entry.cancels = taskId;
        const call = this.taskCalls.get(taskId);
        if (call) call.cancelAsked = true;
      }
      this.pending.set(key, entry);
      // initialize waits for the server to start, however slowly (once a session: one place).
      if (msg.method !== 'initialize') entry.timer = setTimeout(() => this.unanswered(key, entry), this.opts.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS).unref();
      this.flow();
    }
    this.toUpstream(msg.msg);
  }

  /**
   * A line read while the host is paused, acted on now when it starts no call and its wait could
   * be the reason for the pause: a cancellation of a request in flight (the host's flood may be
   * waiting for that very place), or the host's answer to a server request (the call in flight
   * may be waiting for it: sampling, elicitation). Anything else waits in order; so does all
   * while the server reads nothing.
   */
  private urgent(bytes: Uint8Array): boolean {
    if (this.upstreamFull) return false;
    const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    if (!URGENT_MARKS.some((m) => buf.indexOf(m) >= 0)) return false; // no second parse for the rest
    let msg: RpcMessage;
    try {
      msg = decodeLine(bytes, { maxLineBytes: this.opts.maxLineBytes });
    } catch (e) {
      if (!(e instanceof WireError)) throw e;
      return false; // refused in its turn
    }
    if (msg.kind === 'response') {
      this.toUpstream(msg.msg);
      return true;
    }
    if (msg.kind !== 'notification' || msg.method !== 'notifications/cancelled') return false;
    const requestId = isJsonObject(msg.params ?? null) ? (msg.params as JsonObject).requestId : undefined;
    const entry = isRpcId(requestId) ? this.pending.get(idKey(requestId)) : undefined;
    if (!entry || entry.cancelled) return false; // a second one is not urgent: it waits its turn
    if (!this.cancel(msg.params)) this.toUpstream(msg.msg);
    return true;
  }

  /**
   * notifications/cancelled for a request in flight: nothing more reaches the host for its id;
   * the upstream hears of it only when it was sent the request. True when fully handled here.
   */
  private cancel(params: JsonValue | undefined): boolean {
    const requestId = isJsonObject(params ?? null) ? (params as JsonObject).requestId : undefined;
    const entry = isRpcId(requestId) ? this.pending.get(idKey(requestId)) : undefined;
    if (!entry) return false; // not ours to track: passed on as it came
    entry.cancelled = true;
    // The host gave up on a request that is not a call: its place is freed now, not when the
    // server answers (it may never). A tasks/result for a gated call stays: its answer settles the call.
    if (entry.method !== 'tools/call' && entry.resultOf === undefined) this.giveUp(idKey(requestId as RpcId), entry, false);
    // A forwarded call likewise: MCP lets the server leave a cancelled request unanswered (the
    // SDK's server does), and waiting for --call-timeout held its place meanwhile. It ends now,
    // outcome unknown (it may have run); an answer that still comes is dropped as a late one.
    // One sent with a task is cancelled by tasks/cancel only, and keeps its place.
    else if (entry.method === 'tools/call' && entry.waiter && !entry.task) {
      const key = idKey(requestId as RpcId);
      this.pending.delete(key);
      this.abandon(key, false);
      this.holdServerPlace(key);
      entry.waiter.reject(new TaskCancelled('cancelled by the host after it was forwarded'));
      this.flow();
    } else if (entry.held) this.unhold(entry);
    return !entry.forwarded;
  }

  /** A cancelled call the server may still run keeps its place there until answered, or --call-timeout. */
  private holdServerPlace(key: string): void {
    const timer = setTimeout(() => this.freeServerPlace(key), this.opts.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS).unref();
    this.cancelledAtServer.set(remembered(key), timer);
  }

  /** The server answered a cancelled call (or its time is up): a held call may go in its place. */
  private freeServerPlace(key: string): void {
    const k = remembered(key);
    const timer = this.cancelledAtServer.get(k);
    if (timer === undefined) return;
    clearTimeout(timer);
    this.cancelledAtServer.delete(k);
    this.sendHeld();
  }

  /** Calls at the server (in flight, or cancelled and unanswered) are under twice --max-in-flight. */
  private serverHasRoom(): boolean {
    if (this.cancelledAtServer.size === 0) return true; // no count on the usual path
    let n = this.cancelledAtServer.size;
    for (const p of this.pending.values()) if (p.waiter) n++;
    return n < 2 * this.maxInFlight;
  }

  private sendHeld(): void {
    while (this.held.length > 0 && this.serverHasRoom()) this.held.shift()!.held?.(true);
  }

  /** A held call sent on (or refused, when cancelled or the session ends) out of its turn. */
  private unhold(entry: Pending): void {
    const i = this.held.indexOf(entry);
    if (i >= 0) this.held.splice(i, 1);
    entry.held?.(true);
  }

  private handleCall(msg: Extract<RpcMessage, { kind: 'request' }>, line: Uint8Array): void {
    const params = readCallParams(msg.params as JsonValue | undefined);
    if (!params.ok) return this.refuse('invalid_request', params.detail, msg.id, line);
    const key = idKey(msg.id);
    if (this.busy(key)) return this.refuse('invalid_request', 'a request with this id is already in flight', msg.id, line);
    const task = params.forwarded.task !== undefined;
    if (task && this.withTask.size >= this.maxInFlight)
      return this.refuse('too_many_tasks', `${this.maxInFlight} calls sent with a task are open in this session (--max-in-flight); fetch or cancel one first`, msg.id, line);
    const entry: Pending = { id: msg.id, method: msg.method, forwarded: false, cancelled: false, task, progress: progressKey(metaOf(msg.params)) };
    this.pending.set(key, entry);
    if (task) this.withTask.add(entry);
    this.flow();
    const forward = () =>
      new Promise<UpstreamReply>((resolve, reject) => {
        const send = () => {
          entry.held = undefined;
          // Withdrawn by the host while it was being decided or held: the tool never sees it.
          if (entry.cancelled) return reject(new NotForwarded('cancelled by the host before forwarding'));
          // The session is ending, or the call already ended (its time ran out while it was held).
          if (this.upstreamExit || this.stopping || this.pending.get(key) !== entry) return reject(new NotForwarded('the session is ending'));
          entry.waiter = { resolve, reject };
          entry.forwarded = true;
          this.toUpstream({ ...msg.msg, params: params.forwarded });
        };
        if (this.serverHasRoom() || entry.cancelled || this.upstreamExit || this.stopping) return send();
        if (this.hostEnded) return reject(new NotForwarded('the host left before the server had a place for it'));
        entry.held = (go) => (go ? send() : ((entry.held = undefined), reject(new NotForwarded('the session is ending'))));
        this.held.push(entry);
      });
    const handled = this.gate
      .handleCall(params.call, forward)
      .then((outcome) => {
        // A call given up on may still be answered: that answer must not match a reused id. The
        // server is told, unless the host cancelled it (its own cancel was passed on) or it was
        // sent with a task, which only tasks/cancel may cancel (and it has no task id yet).
        if (outcome.kind === 'unknown' && this.pending.get(key) === entry && !this.upstreamExit) {
          this.abandon(key, entry.task === true);
          // Ended by --call-timeout: the server may work on, as on a cancelled call (ADR 122).
          if (entry.forwarded && !entry.cancelled && !entry.task) {
            this.cancelAtServer(msg.id);
            this.holdServerPlace(key);
          }
        }
        this.settle(key, entry);
        if (entry.cancelled) return; // the host withdrew it: no late answer, not even -32003
        if (entry.created !== undefined) return; // answered with its task; the outcome is recorded
        switch (outcome.kind) {
          case 'refused':
            return this.write(refusalResponse(msg.id, outcome.data));
          case 'replayed':
            return this.write({ jsonrpc: '2.0', id: msg.id, result: entry.task ? this.replayTask(outcome.result) : outcome.result });
          case 'forwarded':
            return this.write({ jsonrpc: '2.0', id: msg.id, ...outcome.reply } as JsonObject);
          case 'unknown':
            return this.write(unknownOutcomeResponse(msg.id, outcome.why, outcome.entry, outcome.fingerprint));
          case 'not_forwarded':
            return this.write(notForwardedResponse(msg.id, outcome.entry));
        }
      })
      .catch(() => {
        this.settle(key, entry);
        if (!entry.cancelled && entry.created === undefined) this.write(refusalResponse(msg.id, this.gate.failClosedRefusal('the gate could not complete this call')));
      });
    this.track(handled);
  }

  /**
   * A stored result for a call sent with a task: a completed task the gate made, holding it.
   * The session keeps the --max-in-flight most recent (a host that never fetches them would
   * grow its memory without end); an older one is forgotten: the operation's store still holds
   * its result, and the same call with the same operation id replays it again.
   */
  private replayTask(result: JsonValue): JsonObject {
    const now = new Date().toISOString();
    const task: JsonObject = { taskId: `cloakpipe-replay-${randomUUID()}`, status: 'completed', ttl: null, createdAt: now, lastUpdatedAt: now };
    this.replays.set(task.taskId as string, { task, result });
    if (this.replays.size > this.maxInFlight) this.replays.delete(this.replays.keys().next().value as string);
    return { task };
  }

  /** tasks/get and tasks/result for a task the gate made: answered here, never forwarded. */
  private answerReplay(msg: Extract<RpcMessage, { kind: 'request' }>): boolean {
    const taskId = taskIdOf(msg.params as JsonValue | undefined);
    const replay = taskId !== undefined ? this.replays.get(taskId) : undefined;
    if (!replay || (msg.method !== 'tasks/get' && msg.method !== 'tasks/result')) return false;
    if (msg.method === 'tasks/get') {
      this.write({ jsonrpc: '2.0', id: msg.id, result: replay.task });
      return true;
    }
    this.replays.delete(taskId as string);
    this.write({ jsonrpc: '2.0', id: msg.id, result: replay.result });
    return true;
  }

  /** Refuse and record a host message; `id` undefined: a notification, recorded, not answered. */
  private refuse(code: RefusalCode, detail: string, id: RpcId | null | undefined, line: Uint8Array | { digest: Digest } = NO_LINE): void {
    this.refusing++;
    this.flow();
    const task = this.gate.refuseWire(code, detail, line).then(
      (data) => {
        this.refusing--;
        if (id !== undefined) this.write(refusalResponse(id, data));
      },
      () => {
        this.refusing--;
        if (id !== undefined) this.write(refusalResponse(id, this.gate.failClosedRefusal('the gate could not record this refusal')));
      },
    );
    this.track(task);
  }

  // ── upstream → host ──────────────────────────────────────────────────────────────────────

  private fromUpstream(frame: InboundFrame): void {
    if (frame.kind === 'oversize') return dropped('frame_too_large', frame.digest);
    // Not completely sent (the SDK's client never reads a last line without its newline).
    if (frame.unterminated) return dropped('unterminated_line', frame.bytes);
    let msg: RpcMessage;
    try {
      msg = decodeLine(frame.bytes, { maxLineBytes: Number.MAX_SAFE_INTEGER }); // the transport bounds size
    } catch (e) {
      if (!(e instanceof WireError)) throw e;
      return dropped(e.code, frame.bytes);
    }
    if (msg.kind === 'response') return this.reply(msg, frame.bytes);
    // MCP: progress only while its request is in flight; one for a request that ended (answered,
    // cancelled, given up on) would reach a host that no longer knows the token, or reuses it.
    if (msg.kind === 'notification' && msg.method === 'notifications/progress' && !this.inProgress(msg.params as JsonValue | undefined)) return dropped('late_progress', frame.bytes, 'info');
    // A server request or notification: the flow session sees it before the host does.
    this.gate.observeServerOutput(msg.msg);
    this.write(msg.msg);
    if (msg.kind === 'notification' && msg.method === 'notifications/tasks/status') this.taskReported(taskReport(msg.params as JsonValue | undefined));
  }

  private reply(msg: Extract<RpcMessage, { kind: 'response' }>, bytes: Uint8Array): void {
    const key = msg.id === null ? null : idKey(msg.id);
    const entry = key === null ? undefined : this.pending.get(key);
    if (key === null || !entry || !entry.forwarded) {
      // Late for a call the host was told is unknown: expected, and answered already.
      if (key !== null && this.abandoned.has(remembered(key))) return this.lateReply(key, msg.msg, bytes);
      return dropped('unsolicited_reply', bytes);
    }
    this.pending.delete(key);
    clearTimeout(entry.timer);
    const result = msg.msg.result;
    const reply: UpstreamReply = msg.msg.error !== undefined ? { error: msg.msg.error } : { result: result ?? null };
    if (entry.waiter) {
      if (entry.task && msg.msg.error === undefined && createdTask(result) !== undefined) return this.taskCreated(entry, msg.msg);
      // A call sent with a task is answered with its task at once; an error instead does not say
      // the tool did not run (the SDK's server runs a tool without task support, then refuses
      // its own result): unknown, never failed, which would let a retry run the write again.
      if (entry.task && msg.msg.error !== undefined) return entry.waiter.reject(new Error('a call sent with a task was answered with an error'));
      entry.waiter.resolve(reply); // written by the call's handler once its outcome is recorded
      return;
    }
    this.flow();
    let out = msg.msg;
    const call = entry.resultOf !== undefined ? this.taskCalls.get(entry.resultOf) : undefined;
    if (call?.waiter) {
      // A gated call's result: the gate settles the call with it (the session label rises in
      // memory before any later host message is read) and the host gets it as it came. After
      // the host asked to cancel the task, a failure may be the cancellation of a task that had
      // partly run: unknown, never `failed` (which would let the same write run again).
      this.taskCalls.delete(entry.resultOf as string);
      if (call.cancelAsked && outcomeOf(reply) === 'failed') call.waiter.reject(new TaskCancelled('a task the host cancelled'));
      else call.waiter.resolve(reply);
      if (!entry.cancelled) this.write(out);
      return;
    }
    if (entry.method === 'tools/list' && result !== undefined) {
      // The server's tool definitions, checked against their pins before the host sees them.
      this.gate.observeToolList(result);
      if (!this.opts.listUndeclared) out = { ...out, result: filterToolList(result, (t) => this.gate.declares(t)) };
    }
    this.gate.observeServerOutput(out);
    if (!entry.cancelled) this.write(out);
    if (msg.msg.error === undefined) for (const report of taskReports(entry, result)) this.taskReported(report);
  }

  /**
   * An answer to a request the gate gave up on: dropped. When it creates a task for a call sent
   * with a task, nobody else knows that task (the host was told the outcome is unknown): the
   * gate cancels it with tasks/cancel, as MCP has a task-augmented request cancelled.
   */
  private lateReply(key: string, msg: JsonObject, bytes: Uint8Array): void {
    const k = remembered(key);
    const task = this.abandoned.get(k);
    this.abandoned.delete(k);
    this.freeServerPlace(key);
    dropped('late_reply', bytes, 'info');
    const taskId = task && msg.error === undefined ? createdTask(msg.result as JsonValue | undefined) : undefined;
    if (taskId === undefined || this.upstreamExit) return;
    const id = `cloakpipe-cancel-${randomUUID()}`;
    const entry: Pending = { id, method: 'tasks/cancel', forwarded: true, cancelled: true, byGate: true, cancels: taskId };
    this.pending.set(idKey(id), entry);
    entry.timer = setTimeout(() => this.unanswered(idKey(id), entry), this.opts.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS).unref();
    this.flow();
    this.toUpstream({ jsonrpc: '2.0', id, method: 'tasks/cancel', params: { taskId } });
  }

  /** The server's word on the status of a task, in a reply or a notification. */
  private taskReported(report: TaskReport | undefined): void {
    if (report === undefined) return;
    const call = this.taskCalls.get(report.taskId);
    if (call) call.status = report.status;
    if (report.status === 'cancelled') this.taskCancelled(report.taskId);
    if (report.status === 'failed') this.fetchResult(report.taskId);
  }

  /**
   * A task a gated call waits on failed on its own: its result is the call's outcome, but a
   * host need not fetch it (the official SDK's task stream never does), and the call would end
   * unknown at --call-timeout, its write operation to be reconciled by hand. The gate fetches
   * it itself, unless a tasks/result for it is in flight; the reply settles the call as the
   * host's would and never reaches the host (ADR 052). Also a completed task's, when the host
   * can no longer fetch it (ADR 054).
   */
  private fetchResult(taskId: string): void {
    if (!this.taskCalls.get(taskId)?.waiter || this.upstreamExit) return;
    for (const p of this.pending.values()) if (p.resultOf === taskId) return;
    const id = `cloakpipe-result-${randomUUID()}`;
    this.pending.set(idKey(id), { id, method: 'tasks/result', forwarded: true, cancelled: true, resultOf: taskId, byGate: true });
    this.flow();
    this.toUpstream({ jsonrpc: '2.0', id, method: 'tasks/result', params: { taskId } });
  }

  /**
   * A task a gated call was answered with was cancelled before it brought a result: the call
   * ends outcome unknown now (the task may have partly run), not at --call-timeout; a result
   * fetched later is server output.
   */
  private taskCancelled(taskId: string): void {
    const call = this.taskCalls.get(taskId);
    if (!call?.waiter) return;
    this.taskCalls.delete(taskId);
    call.waiter.reject(new TaskCancelled('the task was cancelled'));
  }

  /**
   * A gated call answered with a task: the host gets the task now, and the call stays open
   * until a tasks/result brings its result (or the call times out: outcome unknown). A task id
   * already waiting is a server reusing it: the call ends unknown and the host never sees it.
   */
  private taskCreated(entry: Pending, msg: JsonObject): void {
    const taskId = createdTask(msg.result as JsonValue) as string;
    this.flow();
    if (this.taskCalls.has(taskId)) return entry.waiter?.reject(new Error('a task id the server gave twice'));
    entry.created = taskId;
    this.taskCalls.set(taskId, entry);
    this.gate.observeServerOutput(msg);
    if (!entry.cancelled) this.write(msg);
  }

  /**
   * The upstream's transport says one request will never be answered (an HTTP exchange that
   * failed or carried no readable answer): it ends now as it would on the upstream's death,
   * instead of at --call-timeout. A gated call's outcome is unknown (it may have run).
   */
  private requestLost(id: RpcId, lost: RequestLost): void {
    const key = idKey(id);
    // A call given up on earlier: its late answer will not come either, so its id is free.
    this.abandoned.delete(remembered(key));
    this.freeServerPlace(key);
    const entry = this.pending.get(key);
    if (!entry || !entry.forwarded) return; // answered already
    dropped(lost.cause, lost.bytes ?? null);
    this.pending.delete(key);
    clearTimeout(entry.timer);
    if (entry.waiter) {
      entry.waiter.reject(lost.gone ? new UpstreamGone('upstream unreachable') : new Error('no readable answer'));
      return; // the call's handler writes the outcome once it is recorded
    }
    this.flow();
    if (!entry.cancelled) this.write(upstreamLostResponse(id));
  }

  private upstreamGone(info: TransportClosed): void {
    this.upstreamExit = info;
    for (const [key, entry] of this.pending) {
      if (entry.waiter) entry.waiter.reject(new UpstreamGone('upstream exited'));
      else if (entry.method !== 'tools/call') {
        if (!entry.cancelled) this.write(upstreamGoneResponse(entry.id));
      } else continue; // still being decided: its forward() finds the upstream gone
      clearTimeout(entry.timer);
      this.pending.delete(key);
    }
    this.abandoned.clear();
    this.releaseHeld();
    for (const call of this.taskCalls.values()) call.waiter?.reject(new UpstreamGone('upstream exited'));
    this.taskCalls.clear();
    void this.shutdown();
  }

  // ── the session's end ────────────────────────────────────────────────────────────────────

  /** The session is ending (or the host left): calls held for a place at the server are never sent. */
  private releaseHeld(): void {
    for (const timer of this.cancelledAtServer.values()) clearTimeout(timer);
    this.cancelledAtServer.clear();
    for (const entry of this.held.splice(0)) entry.held?.(false);
  }

  private async drain(): Promise<void> {
    while (this.tasks.size > 0) await Promise.allSettled([...this.tasks]);
  }

  private async shutdown(): Promise<void> {
    await this.drain();
    if (this.upstreamExit === null) {
      void this.upstream.close();
      return; // the upstream's exit calls shutdown again
    }
    if (this.upstreamExit.startError) return this.fail(this.upstreamExit.startError); // the caller names it: exit 2
    this.finish(this.upstreamExit.code === 0 || this.hostEnded || this.stopping ? 0 : 1);
  }
}

/** A request's `_meta`, else undefined. */
function metaOf(params: JsonValue | undefined): JsonValue | undefined {
  return isJsonObject(params ?? null) ? (params as JsonObject)._meta : undefined;
}

/** The key of a progress token (a string or an integer) in a request's `_meta` or a progress notification's params. */
function progressKey(v: JsonValue | undefined): string | undefined {
  const token = isJsonObject(v ?? null) ? (v as JsonObject).progressToken : undefined;
  return isRpcId(token) ? remembered(idKey(token)) : undefined;
}

/** The task id of a CreateTaskResult (a task and no content), else undefined. */
function createdTask(result: JsonValue | undefined): string | undefined {
  if (!isJsonObject(result ?? null) || (result as JsonObject).content !== undefined) return undefined;
  return taskIdOf((result as JsonObject).task);
}

interface TaskReport {
  taskId: string;
  status: string;
}

/**
 * The task statuses a successful reply is the server's word on: the task a tasks/cancel named
 * (cancelled), else a tasks/get reply's task, or a tasks/list reply's tasks.
 */
function taskReports(entry: Pending, result: JsonValue | undefined): TaskReport[] {
  if (entry.cancels !== undefined) return [{ taskId: entry.cancels, status: 'cancelled' }];
  const listed = entry.method === 'tasks/list' && isJsonObject(result ?? null) && Array.isArray((result as JsonObject).tasks) ? ((result as JsonObject).tasks as JsonValue[]) : [];
  return [result, ...listed].map(taskReport).filter((r): r is TaskReport => r !== undefined);
}

/** A task's id and status (a tasks/get reply, a task in a tasks/list reply, a status notification), else undefined. */
function taskReport(v: JsonValue | undefined): TaskReport | undefined {
  const taskId = taskIdOf(v);
  const status = taskId !== undefined ? (v as JsonObject).status : undefined;
  return typeof status === 'string' ? { taskId: taskId as string, status } : undefined;
}

/** The string `taskId` of an object (a tasks/* request's params, a task), else undefined. */
function taskIdOf(v: JsonValue | undefined): string | undefined {
  const id = isJsonObject(v ?? null) ? (v as JsonObject).taskId : undefined;
  return typeof id === 'string' ? id : undefined;
}

/** An upstream message that never reaches the host: logged by its digest only. */
function dropped(cause: string, bytes: Uint8Array | Digest | null, level: 'info' | 'warn' = 'warn'): void {
  if (bytes !== null) log[level]('upstream_message_dropped', { cause, line_digest: typeof bytes === 'string' ? bytes : digestBytes(bytes) });
  else log[level]('upstream_message_dropped', { cause });
}
