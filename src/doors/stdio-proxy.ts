// The stdio door: MCP over stdio from the host, through the gate, to a spawned upstream server.
// Host lines are framed and parsed strictly; a line that fails is answered with a refusal and
// never forwarded. tools/call goes through the gate; everything else is forwarded in canonical
// form. Server lines pass to the host unchanged.
import type { Readable, Writable } from 'node:stream';
import { LineFramer } from '../wire/frame.js';
import { decodeLine, encodeMessage, readableId, WireError, type RpcId, type RpcMessage } from '../wire/message.js';
import { isJsonObject, type JsonObject, type JsonValue } from '../core/json.js';
import { UpstreamGone, type Gate } from '../gate/gate.js';
import type { UpstreamReply } from '../core/outcome.js';
import { Upstream } from './upstream.js';
import { refusalResponse, unknownOutcomeResponse, upstreamGoneResponse } from './responses.js';

export interface StdioProxyOptions {
  gate: Gate;
  command: string;
  args: string[];
  maxLineBytes: number;
  input: Readable;
  output: Writable;
}

interface Waiter {
  resolve: (r: { reply: UpstreamReply; raw: Buffer }) => void;
  reject: (e: Error) => void;
}

const idKey = (id: RpcId) => JSON.stringify(id);

/** Runs until the host or the upstream ends; resolves with the gate's exit status, rejects with UpstreamStartError. */
export function runStdioProxy(opts: StdioProxyOptions): Promise<number> {
  const { gate, output } = opts;
  const callWaiters = new Map<string, Waiter>(); // forwarded tools/call awaiting the server
  const otherPending = new Map<string, { id: RpcId; method: string }>(); // other forwarded requests awaiting the server
  // Calls the gate gave up on (timeout) that the server may still answer: a late answer must
  // not reach the host after it was told the outcome is unknown, nor match a reused id.
  const abandoned = new Set<string>();
  const busy = (key: string) => callWaiters.has(key) || otherPending.has(key) || abandoned.has(key);
  const inFlight = new Set<Promise<void>>();
  let hostEnded = false;
  let upstreamExit: { code: number | null } | null = null;

  const write = (data: string | Buffer) => {
    if (output.writable) output.write(data);
  };
  const writeMsg = (msg: JsonObject) => write(encodeMessage(msg));

  let finish!: (code: number) => void;
  let fail!: (e: Error) => void;
  const done = new Promise<number>((resolve, reject) => ((finish = resolve), (fail = reject)));

  const upstream = new Upstream(opts.command, opts.args, {
    line(raw) {
      let msg: unknown;
      try {
        msg = JSON.parse(raw.toString('utf8'));
      } catch {
        msg = undefined;
      }
      if (isJsonObject(msg as JsonValue) && (msg as JsonObject).method === undefined && 'id' in (msg as JsonObject)) {
        const m = msg as JsonObject;
        const key = idKey(m.id as RpcId);
        const waiter = callWaiters.get(key);
        if (waiter) {
          callWaiters.delete(key);
          const reply: UpstreamReply = m.error !== undefined ? { error: m.error } : { result: m.result ?? null };
          waiter.resolve({ reply, raw });
          return; // written by the call's handler once its outcome is recorded
        }
        if (abandoned.delete(key)) return; // the host was already told the outcome is unknown
        const pending = otherPending.get(key);
        otherPending.delete(key);
        // The server's tool definitions, checked against their pins before the host sees them.
        if (pending?.method === 'tools/list' && m.result !== undefined) gate.observeToolList(m.result);
      }
      // Not a gated call's reply: it still reaches the host, so the flow session sees it first.
      gate.observeServerOutput(msg === undefined ? raw.toString('utf8') : (msg as JsonValue));
      write(Buffer.concat([raw, Buffer.from('\n')]));
    },
    exit(code) {
      upstreamExit = { code };
      for (const w of callWaiters.values()) w.reject(new UpstreamGone('upstream exited'));
      callWaiters.clear();
      abandoned.clear();
      for (const { id } of otherPending.values()) writeMsg(upstreamGoneResponse(id));
      otherPending.clear();
      void shutdown();
    },
  });

  async function shutdown() {
    while (inFlight.size > 0) await Promise.allSettled([...inFlight]);
    if (upstreamExit === null) {
      upstream.stop();
      return; // the upstream's exit calls shutdown again
    }
    if (upstream.startError) return fail(upstream.startError); // the caller names it: exit 2
    finish(upstreamExit.code === 0 || hostEnded ? 0 : 1);
  }

  function handleCall(msg: Extract<RpcMessage, { kind: 'request' }>) {
    const params = msg.params;
    if (!isJsonObject(params as JsonValue) || typeof (params as JsonObject).name !== 'string') {
      return void refuseLine('invalid_request', 'tools/call params must name a tool', msg.id);
    }
    const p = params as JsonObject;
    const extra = Object.keys(p).filter((k) => k !== 'name' && k !== 'arguments' && k !== '_meta');
    const args = p.arguments ?? {};
    const meta = p._meta ?? {};
    if (extra.length > 0 || !isJsonObject(args) || !isJsonObject(meta)) {
      return void refuseLine('invalid_request', 'tools/call params hold only name, arguments and _meta objects', msg.id);
    }
    const key = idKey(msg.id);
    if (busy(key)) {
      return void refuseLine('invalid_request', 'a request with this id is already in flight', msg.id);
    }
    // Gate-level metadata (receipts, operation ids) is the gate's; the server gets the rest.
    const forwardedMeta: JsonObject = {};
    for (const [k, v] of Object.entries(meta)) if (!k.startsWith('cloakpipe/')) forwardedMeta[k] = v;
    const forwardedParams: JsonObject = { name: p.name, arguments: args };
    if (Object.keys(forwardedMeta).length > 0) forwardedParams._meta = forwardedMeta;
    const forwarded: JsonObject = { ...msg.msg, params: forwardedParams };
    let raw: Buffer | undefined;
    const forward = () =>
      new Promise<UpstreamReply>((resolve, reject) => {
        if (!upstream.alive) return reject(new UpstreamGone('upstream exited'));
        callWaiters.set(key, {
          resolve: (r) => {
            raw = r.raw;
            resolve(r.reply);
          },
          reject,
        });
        upstream.send(encodeMessage(forwarded));
      });
    const task = gate
      .handleCall({ tool: p.name as string, arguments: args, meta }, forward)
      .then((outcome) => {
        if (callWaiters.delete(key) && outcome.kind === 'unknown') abandoned.add(key);
        switch (outcome.kind) {
          case 'refused':
            return writeMsg(refusalResponse(msg.id, outcome.data));
          case 'replayed':
            return writeMsg({ jsonrpc: '2.0', id: msg.id, result: outcome.result });
          case 'forwarded':
            return write(Buffer.concat([raw!, Buffer.from('\n')]));
          case 'unknown':
            return writeMsg(unknownOutcomeResponse(msg.id, outcome.why, outcome.entry, outcome.fingerprint));
        }
      })
      .catch(() => writeMsg(refusalResponse(msg.id, { reason: 'fail_closed', detail: 'the gate could not complete this call', ...gate.digests(), entry: null })));
    inFlight.add(task);
    void task.finally(() => inFlight.delete(task));
  }

  function refuseLine(code: Parameters<Gate['refuseWire']>[0], detail: string, id: RpcId | null, line: Buffer = Buffer.from('')) {
    const task = gate.refuseWire(code, detail, line).then((data) => writeMsg(refusalResponse(id, data)));
    inFlight.add(task);
    void task.finally(() => inFlight.delete(task));
  }

  function handleLine(line: Buffer) {
    let msg: RpcMessage;
    try {
      msg = decodeLine(line, { maxLineBytes: opts.maxLineBytes });
    } catch (e) {
      if (!(e instanceof WireError)) throw e;
      return refuseLine(e.code, e.detail, readableId(line, { maxLineBytes: opts.maxLineBytes }), line);
    }
    if (msg.kind === 'request' && msg.method === 'tools/call') return handleCall(msg);
    if (msg.kind === 'request') {
      if (busy(idKey(msg.id)))
        return refuseLine('invalid_request', 'a request with this id is already in flight', msg.id, line);
      if (!upstream.alive) return writeMsg(upstreamGoneResponse(msg.id));
      otherPending.set(idKey(msg.id), { id: msg.id, method: msg.method });
    }
    upstream.send(encodeMessage(msg.msg));
  }

  const framer = new LineFramer({ maxLineBytes: opts.maxLineBytes });
  opts.input.on('data', (chunk: Buffer) => {
    for (const ev of framer.push(chunk)) {
      if (ev.kind === 'line') handleLine(ev.line);
      else refuseLine('frame_too_large', `line longer than ${opts.maxLineBytes} bytes`, null);
    }
  });
  opts.input.on('end', () => {
    for (const ev of framer.end()) if (ev.kind === 'line') handleLine(ev.line);
    hostEnded = true;
    void shutdown();
  });
  return done;
}
