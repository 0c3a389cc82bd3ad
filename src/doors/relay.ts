// The relay: one MCP session between a host transport and an upstream transport, whatever the
// door. Host frames are parsed strictly; a frame that fails is answered with a refusal and never
// forwarded. tools/call goes through the gate; everything else is forwarded in canonical form.
// It owns what every door would otherwise copy: matching replies to requests, ids the gate gave
// up on, id reuse, the tools/call params shape. One relay per session; it keeps no global state.
import { decodeLine, encodeMessage, readableId, WireError, type RpcId, type RpcMessage } from '../wire/message.js';
import { isJsonObject, type JsonObject, type JsonValue } from '../core/json.js';
import type { Call } from '../core/call.js';
import type { RefusalCode } from '../core/refusal.js';
import type { CallOutcome, RefusalData, UpstreamReply } from '../core/outcome.js';
import { UpstreamGone, type Forward } from '../gate/gate.js';
import type { InboundFrame, Transport, TransportClosed } from './transport.js';
import { readCallParams } from './call-params.js';
import { refusalResponse, unknownOutcomeResponse, upstreamGoneResponse } from './responses.js';

/** What the relay needs from the gate (src/gate/gate.ts implements it). */
export interface RelayGate {
  handleCall(call: Omit<Call, 'taskId'>, forward: Forward): Promise<CallOutcome>;
  refuseWire(code: RefusalCode, detail: string, line: Uint8Array): Promise<RefusalData>;
  /** The refusal for a call the gate failed on before it could answer otherwise. */
  failClosedRefusal(detail: string): RefusalData;
  observeServerOutput(output: JsonValue): void;
  observeToolList(result: JsonValue): void;
}

export interface RelayOptions {
  gate: RelayGate;
  host: Transport;
  upstream: Transport;
  /** The host's largest accepted message, in bytes. */
  maxLineBytes: number;
}

interface Waiter {
  resolve: (r: { reply: UpstreamReply; raw: Uint8Array }) => void;
  reject: (e: Error) => void;
}

/** A host request forwarded (or about to be) and not yet answered. */
interface Pending {
  id: RpcId;
  method: string;
  /** Set for a tools/call once the gate lets it through: the reply goes to the gate first. */
  waiter?: Waiter;
}

const idKey = (id: RpcId) => JSON.stringify(id);

export class Relay {
  private readonly gate: RelayGate;
  private readonly host: Transport;
  private readonly upstream: Transport;
  private readonly pending = new Map<string, Pending>();
  // Calls the gate gave up on (timeout) that the server may still answer: a late answer must
  // not reach the host after it was told the outcome is unknown, nor match a reused id.
  private readonly abandoned = new Set<string>();
  private readonly tasks = new Set<Promise<void>>();
  private hostEnded = false;
  private upstreamExit: TransportClosed | null = null;
  private finish!: (code: number) => void;
  private fail!: (e: Error) => void;
  /** The session's exit status once the host or the upstream has ended it; rejects with the upstream's start error. */
  readonly done = new Promise<number>((resolve, reject) => ((this.finish = resolve), (this.fail = reject)));

  constructor(private readonly opts: RelayOptions) {
    this.gate = opts.gate;
    this.host = opts.host;
    this.upstream = opts.upstream;
    this.host.onframe = (f) => this.fromHost(f);
    this.host.onclose = () => {
      this.hostEnded = true;
      void this.shutdown();
    };
    this.upstream.onframe = (f) => this.fromUpstream(f);
    this.upstream.onclose = (info) => this.upstreamGone(info);
  }

  /** Start the upstream, then the host; resolves with the exit status when the session ends. */
  async run(): Promise<number> {
    await this.upstream.start();
    await this.host.start();
    return this.done;
  }

  private busy(key: string): boolean {
    return this.pending.has(key) || this.abandoned.has(key);
  }

  private track(task: Promise<void>): void {
    this.tasks.add(task);
    void task.finally(() => this.tasks.delete(task));
  }

  private write(msg: JsonObject): void {
    this.host.send(encodeMessage(msg).slice(0, -1));
  }

  private writeRaw(raw: Uint8Array): void {
    this.host.send(Buffer.from(raw).toString('utf8'));
  }

  // ── host → upstream ──────────────────────────────────────────────────────────────────────

  private fromHost(frame: InboundFrame): void {
    if (frame.kind === 'oversize') return this.refuseLine('frame_too_large', `line longer than ${frame.limit} bytes`, frame.id);
    const line = frame.bytes;
    let msg: RpcMessage;
    try {
      msg = decodeLine(line, { maxLineBytes: this.opts.maxLineBytes });
    } catch (e) {
      if (!(e instanceof WireError)) throw e;
      return this.refuseLine(e.code, e.detail, readableId(line, { maxLineBytes: this.opts.maxLineBytes }), line);
    }
    if (msg.kind === 'request' && msg.method === 'tools/call') return this.handleCall(msg);
    if (msg.kind === 'request') {
      const key = idKey(msg.id);
      if (this.busy(key)) return this.refuseLine('invalid_request', 'a request with this id is already in flight', msg.id, line);
      if (this.upstreamExit) return this.write(upstreamGoneResponse(msg.id));
      this.pending.set(key, { id: msg.id, method: msg.method });
    }
    this.upstream.send(encodeMessage(msg.msg).slice(0, -1));
  }

  private handleCall(msg: Extract<RpcMessage, { kind: 'request' }>): void {
    const params = readCallParams(msg.params as JsonValue | undefined);
    if (!params.ok) return this.refuseLine('invalid_request', params.detail, msg.id);
    const key = idKey(msg.id);
    if (this.busy(key)) return this.refuseLine('invalid_request', 'a request with this id is already in flight', msg.id);
    const entry: Pending = { id: msg.id, method: msg.method };
    this.pending.set(key, entry);
    const forwarded: JsonObject = { ...msg.msg, params: params.forwarded };
    let raw: Uint8Array | undefined;
    const forward = () =>
      new Promise<UpstreamReply>((resolve, reject) => {
        if (this.upstreamExit) return reject(new UpstreamGone('upstream exited'));
        entry.waiter = {
          resolve: (r) => {
            raw = r.raw;
            resolve(r.reply);
          },
          reject,
        };
        this.upstream.send(encodeMessage(forwarded).slice(0, -1));
      });
    const task = this.gate
      .handleCall(params.call, forward)
      .then((outcome) => {
        if (this.pending.get(key) === entry) this.pending.delete(key);
        if (entry.waiter && outcome.kind === 'unknown' && !this.upstreamExit) this.abandoned.add(key);
        switch (outcome.kind) {
          case 'refused':
            return this.write(refusalResponse(msg.id, outcome.data));
          case 'replayed':
            return this.write({ jsonrpc: '2.0', id: msg.id, result: outcome.result });
          case 'forwarded':
            return this.writeRaw(raw!);
          case 'unknown':
            return this.write(unknownOutcomeResponse(msg.id, outcome.why, outcome.entry, outcome.fingerprint));
        }
      })
      .catch(() => {
        if (this.pending.get(key) === entry) this.pending.delete(key);
        this.write(refusalResponse(msg.id, this.gate.failClosedRefusal('the gate could not complete this call')));
      });
    this.track(task);
  }

  private refuseLine(code: RefusalCode, detail: string, id: RpcId | null, line: Uint8Array = new Uint8Array()): void {
    this.track(this.gate.refuseWire(code, detail, line).then((data) => this.write(refusalResponse(id, data))));
  }

  // ── upstream → host ──────────────────────────────────────────────────────────────────────

  private fromUpstream(frame: InboundFrame): void {
    if (frame.kind === 'oversize') return;
    const raw = frame.bytes;
    let msg: unknown;
    try {
      msg = JSON.parse(Buffer.from(raw).toString('utf8'));
    } catch {
      msg = undefined;
    }
    if (isJsonObject(msg as JsonValue) && (msg as JsonObject).method === undefined && 'id' in (msg as JsonObject)) {
      const m = msg as JsonObject;
      const key = idKey(m.id as RpcId);
      const entry = this.pending.get(key);
      if (entry?.waiter) {
        this.pending.delete(key);
        const reply: UpstreamReply = m.error !== undefined ? { error: m.error } : { result: m.result ?? null };
        entry.waiter.resolve({ reply, raw });
        return; // written by the call's handler once its outcome is recorded
      }
      if (this.abandoned.delete(key)) return; // the host was already told the outcome is unknown
      if (entry && entry.method !== 'tools/call') {
        this.pending.delete(key);
        // The server's tool definitions, checked against their pins before the host sees them.
        if (entry.method === 'tools/list' && m.result !== undefined) this.gate.observeToolList(m.result);
      }
    }
    // Not a gated call's reply: it still reaches the host, so the flow session sees it first.
    this.gate.observeServerOutput(msg === undefined ? Buffer.from(raw).toString('utf8') : (msg as JsonValue));
    this.writeRaw(raw);
  }

  private upstreamGone(info: TransportClosed): void {
    this.upstreamExit = info;
    for (const [key, entry] of this.pending) {
      if (entry.waiter) entry.waiter.reject(new UpstreamGone('upstream exited'));
      else if (entry.method !== 'tools/call') this.write(upstreamGoneResponse(entry.id));
      else continue; // still being decided: its forward() finds the upstream gone
      this.pending.delete(key);
    }
    this.abandoned.clear();
    void this.shutdown();
  }

  // ── the session's end ────────────────────────────────────────────────────────────────────

  private async shutdown(): Promise<void> {
    while (this.tasks.size > 0) await Promise.allSettled([...this.tasks]);
    if (this.upstreamExit === null) {
      void this.upstream.close();
      return; // the upstream's exit calls shutdown again
    }
    if (this.upstreamExit.startError) return this.fail(this.upstreamExit.startError); // the caller names it: exit 2
    this.finish(this.upstreamExit.code === 0 || this.hostEnded ? 0 : 1);
  }
}
