// The upstream of a confined session, through the one relay every door uses: the bridge is a
// door whose host side is in memory. So a confined call meets every check mcp-proxy runs, in
// the same place: the relay lists the server's tools at start (the gate pins their definitions
// and refuses a tool whose definition changed), strictly parses each reply, and hands each call
// to the gate's decision before anything reaches the server.
import type { JsonObject, JsonValue } from '../core/json.js';
import { isJsonObject } from '../core/json.js';
import type { CallOutcome } from '../core/outcome.js';
import { Relay, type RelayGate } from '../doors/relay.js';
import type { InboundFrame, Transport, TransportClosed } from '../doors/transport.js';
import { ProcessTransport } from '../doors/upstream/process.js';
import { bridgeOutcome, type BridgeOutcome } from './gate-port.js';

/** The gate's _meta key that ties a relay's call back to the bridge request it came from (stripped before forwarding). */
const BRIDGE_CALL = 'cloakpipe/bridge_call';
/** How long the server may take to answer initialize or tools/list at start. */
const START_TIMEOUT_MS = 60_000;
const PROTOCOL_VERSION = '2025-06-18';
/** The bridge's own requests: a call frame is at most 64 KiB of arguments plus the envelope. */
const MAX_HOST_LINE = 1024 * 1024;

/** The relay's host side: frames the bridge writes in, messages the relay writes out. */
class BridgeHost implements Transport {
  onframe?: (frame: InboundFrame) => void;
  onclose?: (info: TransportClosed) => void;

  constructor(private readonly receive: (msg: JsonObject) => void) {}

  async start(): Promise<void> {}

  send(message: string): void {
    this.receive(JSON.parse(message) as JsonObject);
  }

  async close(): Promise<void> {}

  push(msg: JsonObject): void {
    this.onframe?.({ kind: 'frame', bytes: Buffer.from(JSON.stringify(msg), 'utf8') });
  }
}

export interface ConfineUpstreamOptions {
  /** The confined session's gate (its relay face). */
  gate: RelayGate;
  /** The server's environment before CLOAKPIPE_* is removed (default: this process's). */
  env?: NodeJS.ProcessEnv;
}

export class ConfineUpstream {
  private gone = false;
  private readonly goneHandlers: (() => void)[] = [];
  private readonly waiting = new Map<number, (msg: JsonObject) => void>();
  /** The gate's typed outcome of each call, by the bridge's call number. */
  private readonly outcomes = new Map<number, CallOutcome>();
  private nextId = 1;
  private readonly host: BridgeHost;
  private readonly process: ProcessTransport;
  private readonly relay: Relay;
  private readonly done: Promise<unknown>;

  private constructor(command: string, args: string[], o: ConfineUpstreamOptions) {
    this.host = new BridgeHost((msg) => this.fromRelay(msg));
    // The server's stderr is not ours to echo: it may repeat the agent's arguments.
    this.process = new ProcessTransport(command, args, { env: o.env, stderr: 'ignore' });
    const gate: RelayGate = {
      ...bind(o.gate),
      handleCall: async (call, forward) => {
        const outcome = await o.gate.handleCall(call, forward);
        const n = call.meta[BRIDGE_CALL];
        if (typeof n === 'number') this.outcomes.set(n, outcome);
        return outcome;
      },
    };
    this.relay = new Relay({ gate, host: this.host, upstream: this.process, maxLineBytes: MAX_HOST_LINE });
    const closed = this.process.onclose!;
    this.process.onclose = (info) => {
      closed(info);
      this.markGone();
    };
    this.done = this.relay.run().catch(() => this.markGone());
  }

  /** Start the server, initialize it and list its tools through the relay (the pins see them). */
  static async connect(command: string, args: string[], o: ConfineUpstreamOptions): Promise<ConfineUpstream> {
    const up = new ConfineUpstream(command, args, o);
    try {
      const init = await up.request('initialize', { protocolVersion: PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: 'cloakpipe-confine', version: '0.1.0' } });
      if (!isJsonObject(init.result ?? null)) throw new Error('the upstream did not initialize');
      up.host.push({ jsonrpc: '2.0', method: 'notifications/initialized' });
      let cursor: JsonValue | undefined;
      do {
        const list = await up.request('tools/list', cursor === undefined ? {} : { cursor });
        const result = list.result;
        if (!isJsonObject(result ?? null)) throw new Error('the upstream did not list its tools');
        cursor = (result as JsonObject).nextCursor;
      } while (typeof cursor === 'string');
    } catch (e) {
      await up.close();
      throw e;
    }
    return up;
  }

  get pid(): number | undefined {
    return this.process.pid;
  }

  onGone(h: () => void): void {
    if (this.gone) h();
    else this.goneHandlers.push(h);
  }

  get isGone(): boolean {
    return this.gone;
  }

  /** One call, decided by the gate in the relay and forwarded only when allowed. */
  async call(tool: string, args: JsonObject): Promise<BridgeOutcome> {
    const id = this.nextId++;
    await this.send(id, 'tools/call', { name: tool, arguments: args, _meta: { [BRIDGE_CALL]: id } });
    const outcome = this.outcomes.get(id);
    this.outcomes.delete(id);
    // No outcome from the gate: the relay answered on its own (the gate failed, the session is
    // ending). The session stops rather than guess.
    return outcome ? bridgeOutcome(outcome) : { kind: 'gateway_error' };
  }

  async close(): Promise<void> {
    this.gone = true;
    for (const w of this.waiting.values()) w({ jsonrpc: '2.0', error: { code: -32000, message: 'closed' } });
    this.waiting.clear();
    await this.relay.stop(0);
    await Promise.race([this.done, new Promise((r) => setTimeout(r, 5000).unref())]);
  }

  private markGone(): void {
    if (this.gone) return;
    this.gone = true;
    for (const h of this.goneHandlers) h();
  }

  private async request(method: string, params: JsonObject): Promise<JsonObject> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`the upstream did not answer ${method}`)), START_TIMEOUT_MS)));
    try {
      const answer = await Promise.race([this.send(this.nextId++, method, params), timeout]);
      if (answer.error !== undefined) throw new Error(`the upstream refused ${method}`);
      return answer;
    } finally {
      clearTimeout(timer);
    }
  }

  private send(id: number, method: string, params: JsonObject): Promise<JsonObject> {
    return new Promise((resolve) => {
      if (this.gone) return resolve({ jsonrpc: '2.0', id, error: { code: -32000, message: 'gone' } });
      this.waiting.set(id, resolve);
      this.host.push({ jsonrpc: '2.0', id, method, params });
    });
  }

  /** What the relay writes to the bridge: answers to its requests, and the server's own traffic. */
  private fromRelay(msg: JsonObject): void {
    const isRequest = typeof msg.method === 'string';
    if (isRequest && msg.id !== undefined) {
      // The server asks the host something (sampling, roots, elicitation): the bridge offers none.
      this.host.push({ jsonrpc: '2.0', id: msg.id, error: { code: -32601, message: 'not offered by the confinement bridge' } });
      return;
    }
    if (isRequest || typeof msg.id !== 'number') return; // notifications: nothing to do
    const w = this.waiting.get(msg.id);
    this.waiting.delete(msg.id);
    w?.(msg);
  }
}

/** A RelayGate's methods, bound to it (a gate class or a view object alike). */
function bind(g: RelayGate): RelayGate {
  return {
    handleCall: (call, forward) => g.handleCall(call, forward),
    refuseWire: (code, detail, line) => g.refuseWire(code, detail, line),
    failClosedRefusal: (detail) => g.failClosedRefusal(detail),
    observeServerOutput: (output) => g.observeServerOutput(output),
    observeToolList: (result) => g.observeToolList(result),
    declares: (tool) => g.declares(tool),
  };
}
