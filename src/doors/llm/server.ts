// The LLM door: an HTTP proxy between an agent and its model's API (OpenAI Chat Completions
// and Responses, Anthropic Messages). The request goes to the model as the agent sent it,
// after the tool results it carries have settled their calls; the response comes back with
// every proposed call held until the gate decided it. Each agent is a gate session of its
// own, opened like an MCP session of the HTTP door and decided through the same gate view
// (ADR 037).
//
// Guards: bodies and streams are bounded; a response the door cannot read for sure (not JSON,
// an unknown shape, a broken stream) is refused `fail_closed` and never passed on, and so is a
// request for tools the model API runs itself, before it is forwarded; only the headers the
// model API needs reach it (the agent's API key among them, nothing of the gate's).
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { boundedServer } from '../../util/http-server.js';
import { ByteBudget } from '../../util/byte-budget.js';
import { DEFAULT_MAX_CONNECTIONS } from '../limits.js';
import type { JsonObject, JsonValue } from '../../core/json.js';
import { isJsonObject } from '../../core/json.js';
import type { RefusalData } from '../../core/outcome.js';
import type { RefusalCode } from '../../core/refusal.js';
import type { Gate } from '../../gate/gate.js';
import { parseStrict, WireError } from '../../wire/strict-parse.js';
import { decodeUtf8 } from '../../wire/utf8.js';
import { RawSseReader } from '../../wire/sse-raw.js';
import { SseError } from '../../wire/sse.js';
import { log } from '../../telemetry/log.js';
import { readBodyUpTo } from '../../util/request-body.js';
import type { StaticTokens } from '../http-auth.js';
import { decideSlot, HeldCalls, refusalText } from './held.js';
import { LlmSession } from './session.js';
import { readModelJson } from './model-json.js';
import { Unreadable, type LlmFormat, type StreamRewriter } from './format.js';
import { openai } from './openai.js';
import { anthropic } from './anthropic.js';
import { responses } from './responses.js';

export type OnRefusal = 'rewrite' | 'error';

export interface LlmDoorOptions {
  gate: Gate;
  /** The model API's base: a request for PATH goes to upstreamUrl + PATH. */
  upstreamUrl: URL;
  /** Largest request body, response body and stream event. */
  maxBodyBytes: number;
  /** Longest a response may last, read from the model API and read by the agent. */
  streamTimeoutMs: number;
  /** Agent connections open at once; one beyond is closed as it comes (ADR 085, as the HTTP door). */
  maxConnections?: number;
  onRefusal: OnRefusal;
  /** Agents' credentials for the gate itself (Proxy-Authorization: Bearer …); none: loopback only. */
  tokens?: StaticTokens;
  agent?: string;
}

/** Request headers the model API needs; everything else (cookies, the gate's own) stays here. */
const REQUEST_HEADERS = ['content-type', 'accept', 'authorization', 'x-api-key', 'api-key', 'anthropic-version', 'anthropic-beta', 'openai-organization', 'openai-project'];
const RESPONSE_HEADER = /^(content-type|x-request-id|request-id|retry-after|openai-.*|anthropic-.*|x-ratelimit-.*)$/;
const RECEIPT_HEADER = 'cloakpipe-approval';

/** Which format a path speaks; any other path is not served (nothing passes ungated). */
function formatOf(path: string): LlmFormat | null {
  if (path.endsWith('/chat/completions')) return openai;
  if (path.endsWith('/responses')) return responses;
  if (path.endsWith('/messages')) return anthropic;
  return null;
}

class TooLarge extends Error {}

/** The least the agents' large request bodies may hold of the gate at once, read and sent (raised to --max-body). */
const REQUEST_BYTES = 32 * 1024 * 1024;
/** A body declared this small never waits for the budget (a short conversation's request). */
const UNBUDGETED_BYTES = 64 * 1024;
/** The agent stopped reading a stream (its socket full) until the stream's deadline. */
class AgentStalled extends Error {}

/**
 * Resolves true once the response is written out (`drain`: what it holds so far; `finish`:
 * all of it) or the agent has gone, false when the deadline comes first: an agent that stops
 * reading holds the handler, and the bytes waiting for it, no longer than that.
 */
function writtenOut(res: ServerResponse, event: 'drain' | 'finish', deadline: AbortSignal): Promise<boolean> {
  if (deadline.aborted) return Promise.resolve(false);
  return new Promise((resolve) => {
    const done = (read: boolean) => () => {
      res.off(event, onOut);
      res.off('close', onOut);
      deadline.removeEventListener('abort', onDeadline);
      resolve(read);
    };
    const onOut = done(true);
    const onDeadline = done(false);
    res.once(event, onOut);
    res.once('close', onOut);
    deadline.addEventListener('abort', onDeadline, { once: true });
  });
}

export class LlmDoor {
  readonly server: Server;
  private readonly sessions = new Map<string, LlmSession>();
  private readonly active = new Set<Promise<void>>();
  private readonly bodies: ByteBudget;

  constructor(private readonly o: LlmDoorOptions) {
    this.server = boundedServer((req, res) => {
      const task = this.handle(req, res).catch(() => {
        if (!res.headersSent) sendJson(res, 500, { error: { message: 'cloakpipe: internal error', type: 'cloakpipe_error' } });
        else res.end();
      });
      this.active.add(task);
      void task.finally(() => this.active.delete(task));
    }, undefined, o.maxConnections ?? DEFAULT_MAX_CONNECTIONS);
    this.bodies = new ByteBudget(Math.max(REQUEST_BYTES, o.maxBodyBytes));
    // Agents' HTTP clients keep connections for a few seconds: the gate keeps them longer, so
    // the client is always the side that closes an idle one (no request lost to the race).
    this.server.keepAliveTimeout = 65_000;
  }

  listen(port: number, host: string): Promise<void> {
    return new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, host, () => resolve());
    });
  }

  /** Stop accepting; let responses in flight finish for up to `graceMs`. */
  async drain(graceMs: number): Promise<void> {
    this.server.close();
    let t: NodeJS.Timeout | undefined;
    await Promise.race([Promise.allSettled([...this.active]), new Promise((r) => (t = setTimeout(r, graceMs)))]);
    clearTimeout(t);
    this.server.closeAllConnections();
    await Promise.all([...this.sessions.values()].map((s) => s.end()));
  }

  private session(agent: string | undefined): LlmSession {
    const key = agent ?? '';
    let s = this.sessions.get(key);
    if (!s) {
      const { gate } = this.o;
      const session = gate.openSession({ execution: 'agent', ...(agent !== undefined ? { agent } : {}) });
      s = new LlmSession(gate.view(session), () => gate.parts.context.get().taskId);
      this.sessions.set(key, s);
    }
    return s;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    // Agents are programs, not pages: a request carrying an Origin comes from a browser, maybe a
    // page that rebound its name to this loopback address (DNS rebinding), and would share the
    // agent's session (its label, its rate windows). Refused, with no CORS header to read it by.
    if (req.headers.origin !== undefined) return sendJson(res, 403, { error: { message: 'cloakpipe: requests from a browser (an Origin header) are refused', type: 'forbidden' } });
    const url = new URL(req.url ?? '/', 'http://gate');
    const format = formatOf(url.pathname);
    if (req.method !== 'POST' || !format) return sendJson(res, 404, { error: { message: 'cloakpipe llm-proxy serves POST …/chat/completions, POST …/responses and POST …/messages only', type: 'not_found' } });
    let agent = this.o.agent;
    if (this.o.tokens) {
      const who = this.o.tokens.check(header(req, 'proxy-authorization'));
      if (!who) return sendJson(res, 401, { error: { message: 'cloakpipe: missing or unknown Proxy-Authorization bearer token', type: 'authentication_error' } });
      agent = who.agent;
    }
    const sent = await this.send(req, res, url, format, agent);
    if (!sent) return;
    const { session, receipts, abort, deadline, upstream } = sent;
    if (upstream.status >= 300 && upstream.status <= 399) {
      void upstream.body?.cancel().catch(() => undefined);
      return sendJson(res, 502, { error: { message: 'cloakpipe: the model API answered with a redirect, which the gate does not follow: give --upstream-url the address it redirects to', type: 'upstream_redirect' } });
    }
    const headers = responseHeaders(upstream);
    const type = upstream.headers.get('content-type') ?? '';
    const decide = (slot: Parameters<typeof decideSlot>[1]) => decideSlot(session, slot, receipts);
    const failClosed = async (detail: string, bytes: Uint8Array) => {
      const refusal = await session.refuseWhole('fail_closed', detail, bytes);
      log.warn('llm_response_refused', { reason: 'fail_closed' });
      return refusal;
    };
    if (upstream.status < 200 || upstream.status > 299 || encoded(upstream.headers.get('content-encoding'))) {
      // The API's own error (no call in it), or a body the door would have to decode: passed
      // on bounded when it is an error, refused when a success is encoded.
      if (upstream.ok) {
        const refusal = await failClosed('the model API response is content-encoded', new Uint8Array());
        return sendJson(res, 502, format.errorBody(refusalText('the response', refusal), refusal));
      }
      let bytes: Uint8Array;
      try {
        bytes = await readResponseBounded(upstream, this.o.maxBodyBytes);
      } catch {
        return sendJson(res, 502, { error: { message: 'cloakpipe: the model API error could not be read', type: 'upstream_error' } });
      }
      return this.deliver(res, deadline, [], failClosed, () => {
        res.writeHead(upstream.status, { ...headers, 'content-length': String(bytes.length) });
        res.end(bytes);
      });
    }
    if (/^text\/event-stream/i.test(type)) return this.stream(res, upstream, headers, format, decide, failClosed, abort, deadline);
    let bytes: Uint8Array;
    try {
      bytes = await readResponseBounded(upstream, this.o.maxBodyBytes);
    } catch (e) {
      const refusal = await failClosed(e instanceof TooLarge ? `the model API response is larger than ${this.o.maxBodyBytes} bytes` : 'the model API response could not be read', new Uint8Array());
      return sendJson(res, 502, format.errorBody(refusalText('the response', refusal), refusal));
    }
    let groups: HeldCalls<null>[];
    let parsed: JsonObject;
    try {
      const v = readModelJson(decodeUtf8(bytes), 'the response');
      if (!isJsonObject(v)) throw new Unreadable('the response is not an object');
      parsed = v;
      groups = format.bodyCalls(parsed).map((slots) => {
        const g = new HeldCalls<null>(decide, () => undefined);
        g.slots.push(...slots);
        slots.forEach((s) => g.complete(s));
        return g;
      });
    } catch (e) {
      if (!(e instanceof WireError) && !(e instanceof Unreadable)) throw e;
      const refusal = await failClosed('the model API response could not be read', bytes);
      return sendJson(res, 502, format.errorBody(refusalText('the response', refusal), refusal));
    }
    await Promise.all(groups.map((g) => g.settled()));
    const refused = groups.flatMap((g) => g.refused);
    return this.deliver(res, deadline, groups, failClosed, () => {
      if (refused.length === 0) {
        // Every call allowed: the agent gets the model's bytes exactly.
        res.writeHead(upstream.status, { ...headers, 'content-length': String(bytes.length) });
        res.end(bytes);
      } else if (this.o.onRefusal === 'error') {
        groups.forEach((g) => g.withdrawAll());
        const first = refused[0];
        sendJson(res, 403, format.errorBody(refusalText(first.tool, first.refusal), first.refusal), headers);
      } else sendJson(res, upstream.status, format.rewriteBody(parsed, groups), headers);
    });
  }

  /**
   * The agent's request read, checked and sent to the model API; null when it was answered here
   * (refused, or the model API unreachable). The body and its parse live in this call only, not
   * through the response. Bodies share a door-wide budget while they are read and sent: a large
   * one waits unread in its socket until its declared bytes fit, so agents sending many large
   * bodies slowly hold no more of the gate than the budget, as the HTTP door's bodies (ADR 092).
   * A small one does not wait behind them: the connection cap bounds what those hold.
   */
  private async send(req: IncomingMessage, res: ServerResponse, url: URL, format: LlmFormat, agent: string | undefined) {
    const declared = Number(req.headers['content-length']);
    const known = req.headers['content-length'] !== undefined && Number.isSafeInteger(declared) && declared >= 0;
    const holds = known && declared <= UNBUDGETED_BYTES ? 0 : Math.min(known ? declared : Infinity, this.o.maxBodyBytes);
    if (holds > 0 && !(await this.bodies.take(holds, req))) return null; // the agent left while it waited
    try {
      let body: Buffer;
      try {
        body = await readBounded(req, this.o.maxBodyBytes);
      } catch (e) {
        if (e instanceof TooLarge) {
          sendJson(res, 413, { error: { message: `cloakpipe: request body larger than ${this.o.maxBodyBytes} bytes`, type: 'request_too_large' } });
          return null;
        }
        throw e;
      }
      let session: LlmSession;
      try {
        session = this.session(agent);
      } catch {
        // A session opens under the task context: one that does not load refuses the request, recorded.
        const detail = 'request: the gate could not open the agent\'s session (does the task context load?)';
        const refusal = await this.o.gate.refuseWire('fail_closed', detail, body, agent !== undefined ? { agent } : {}).catch(() => this.o.gate.failClosedRefusal(detail));
        sendRefusedRequest(res, format, refusal);
        return null;
      }
      const refuseRequest = async (code: RefusalCode, detail: string) => {
        sendRefusedRequest(res, format, await session.refuseWhole(code, `request: ${detail}`, body));
      };
      // The tool results the request carries move the session label before the model's next
      // proposals are decided: the request must be read as strictly as a response.
      let request: JsonValue;
      try {
        request = parseStrict(decodeUtf8(body));
      } catch (e) {
        if (!(e instanceof WireError)) throw e;
        await refuseRequest(e.code, e.detail);
        return null;
      }
      await session.results(format.results(request));
      await new Promise((r) => setImmediate(r)); // the settled calls' label rises run first
      // Tools the model API would run itself never come back as calls to decide: such a request
      // is not forwarded (ADR 048). The results it carries settled above: the agent has them.
      const undecidable = isJsonObject(request) ? format.undecidable(request) : null;
      if (undecidable !== null) {
        await refuseRequest('fail_closed', undecidable);
        return null;
      }
      const receipts = receiptsOf(header(req, RECEIPT_HEADER));

      const abort = new AbortController();
      res.on('close', () => abort.abort());
      // The whole response, read from the model API and read by the agent, within --stream-timeout.
      const deadline = AbortSignal.timeout(this.o.streamTimeoutMs);
      let upstream: Response;
      try {
        upstream = await fetch(new URL(this.o.upstreamUrl.href.replace(/\/$/, '') + url.pathname + url.search), {
          method: 'POST',
          headers: forwardedHeaders(req),
          body: new Uint8Array(body),
          signal: AbortSignal.any([abort.signal, deadline]),
          // A redirect is not followed: fetch would resend the body and the agent's key (x-api-key
          // and api-key are not dropped across origins) to wherever Location points.
          redirect: 'manual',
        });
      } catch {
        sendJson(res, 502, { error: { message: 'cloakpipe: the model API could not be reached', type: 'upstream_unreachable' } });
        return null;
      }
      return { session, receipts, abort, deadline, upstream };
    } finally {
      if (holds > 0) this.bodies.release(holds);
    }
  }

  /**
   * A body written to the agent (`write`), waited for until it is out whole: one the agent does
   * not read is cut at the response's deadline (--stream-timeout) and the cut recorded, so it
   * holds its bytes no longer than a stream would. A body not out whole never reached the agent,
   * so the calls it released are withdrawn (`not_forwarded`), also when the agent hung up before
   * it was written.
   */
  private async deliver(
    res: ServerResponse,
    deadline: AbortSignal,
    groups: HeldCalls<null>[],
    failClosed: (detail: string, bytes: Uint8Array) => Promise<RefusalData>,
    write: () => void,
  ): Promise<void> {
    // Gone already: a response ended on a closed socket reads as finished, so look first.
    if (res.destroyed) return groups.forEach((g) => g.withdrawAll());
    write();
    const inTime = res.writableFinished || (await writtenOut(res, 'finish', deadline));
    if (res.writableFinished) return;
    if (!inTime) res.destroy();
    groups.forEach((g) => g.withdrawAll());
    if (!inTime) await failClosed('the agent did not read the response within the stream timeout', new Uint8Array());
  }

  private async stream(
    res: ServerResponse,
    upstream: Response,
    headers: Record<string, string>,
    format: LlmFormat,
    decide: (slot: Parameters<typeof decideSlot>[1]) => ReturnType<typeof decideSlot>,
    failClosed: (detail: string, bytes: Uint8Array) => Promise<RefusalData>,
    abort: AbortController,
    deadline: AbortSignal,
  ): Promise<void> {
    res.writeHead(upstream.status, { ...headers, 'cache-control': 'no-cache' });
    res.flushHeaders();
    let ended = false;
    const finish = () => {
      if (ended) return;
      ended = true;
      res.end();
      abort.abort();
    };
    const rewriter: StreamRewriter = format.stream({
      write: (bytes) => void (ended || res.write(bytes)),
      decide,
      onRefusal: this.o.onRefusal,
      maxArgumentBytes: this.o.maxBodyBytes,
      fail: (tool, refusal) => {
        if (ended) return;
        res.write(format.errorEvent(refusalText(tool, refusal), refusal));
        finish();
      },
    });
    const reader = new RawSseReader(this.o.maxBodyBytes);
    try {
      for await (const chunk of upstream.body as unknown as AsyncIterable<Uint8Array>) {
        for (const ev of reader.push(chunk)) {
          if (ended) break;
          await rewriter.event(ev);
        }
        if (ended) break;
        if (res.writableNeedDrain && !(await writtenOut(res, 'drain', deadline))) throw new AgentStalled();
      }
      // The events a final CR completes; bytes that end no event are discarded (the format's rule).
      for (const ev of reader.finish().events) if (!ended) await rewriter.event(ev);
      if (!ended) await rewriter.end();
      finish();
    } catch (e) {
      if (e instanceof AgentStalled) {
        // It reads nothing more: no error event would reach it. Cut, and the cut recorded.
        res.destroy();
        await failClosed('the agent did not read the stream within the stream timeout', new Uint8Array());
      } else if (!ended && !res.destroyed) {
        const detail = e instanceof Unreadable || e instanceof WireError || e instanceof SseError ? 'the model API stream could not be read' : abort.signal.aborted ? 'the model API stream was cut' : 'the model API stream timed out or failed';
        const refusal = await failClosed(detail, new Uint8Array());
        if (!ended) res.write(format.errorEvent(refusalText('the response', refusal), refusal));
      }
      finish();
    } finally {
      // Calls allowed but never written to the agent did not reach it.
      for (const g of rewriter.groups()) g.close();
    }
  }
}

function header(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v.join(',') : v;
}

function forwardedHeaders(req: IncomingMessage): Record<string, string> {
  const out: Record<string, string> = { 'accept-encoding': 'identity' };
  for (const name of REQUEST_HEADERS) {
    const v = header(req, name);
    if (v !== undefined) out[name] = v;
  }
  return out;
}

/**
 * Whether a body comes content-encoded: any coding but `identity` (which is no coding, RFC 9110
 * 8.4.1). fetch decodes some codings and passes others as they are, so the gate would read one
 * body and the agent's SDK another: the gate asks for identity and reads nothing else.
 */
function encoded(codings: string | null): boolean {
  return codings !== null && codings.split(',').some((c) => c.trim() !== '' && c.trim().toLowerCase() !== 'identity');
}

function responseHeaders(upstream: Response): Record<string, string> {
  const out: Record<string, string> = {};
  upstream.headers.forEach((v, k) => {
    if (RESPONSE_HEADER.test(k)) out[k] = v;
  });
  return out;
}

/** Approval receipts sent with a request: base64url JSON objects, comma-separated. */
function receiptsOf(value: string | undefined): JsonObject[] {
  if (!value) return [];
  const out: JsonObject[] = [];
  for (const part of value.split(',')) {
    try {
      const v = parseStrict(decodeUtf8(Buffer.from(part.trim(), 'base64url')));
      if (isJsonObject(v)) out.push(v);
    } catch {
      // not a receipt: the approval check never sees it (the inbox still counts)
    }
  }
  return out;
}

async function readBounded(req: IncomingMessage, max: number): Promise<Buffer> {
  const body = await readBodyUpTo(req, max, 'resume');
  if (body === null) throw new TooLarge();
  return body;
}

async function readResponseBounded(r: Response, max: number): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const c of r.body as unknown as AsyncIterable<Uint8Array>) {
    size += c.length;
    if (size > max) throw new TooLarge();
    chunks.push(c);
  }
  return Buffer.concat(chunks);
}

/** A request refused before it was forwarded: an HTTP 400 the agent's SDK raises, with the refusal. */
function sendRefusedRequest(res: ServerResponse, format: LlmFormat, refusal: RefusalData): void {
  sendJson(res, 400, format.errorBody(`cloakpipe refused the request: ${refusal.reason}: ${refusal.detail}`, refusal));
}

function sendJson(res: ServerResponse, status: number, body: JsonObject, headers: Record<string, string> = {}): void {
  const bytes = Buffer.from(JSON.stringify(body));
  res.writeHead(status, { ...headers, 'content-type': 'application/json', 'content-length': String(bytes.length) });
  res.end(bytes);
}
