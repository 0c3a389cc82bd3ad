// The upstream MCP server at a URL, speaking Streamable HTTP, as a Transport for the relay
// (the client side of the transport: one upstream session per gate session). Each message the
// relay sends is one POST; a request's answer comes back as one JSON body or as SSE events on
// that POST, the server's own requests and notifications on a GET stream. Bytes are only
// framed here (JSON bodies and SSE events, both bounded); the relay parses them strictly.
//
// Guards: `--upstream-header` values go on every request and nowhere else (never a log line,
// an error or an entry: diagnostics name the header, the status and the URL's origin and path);
// the host's own headers never reach this file. Redirects are not followed (a credential must
// not follow a server elsewhere). An answer the gate cannot read, a wrong content type, a
// broken stream, a status other than 200/202 or a body over the bound ends that request as on
// the server's death (Transport.onlost); a 404 for the session means the server forgot it, so
// the upstream is gone (docs/decisions/027).
import { Agent as HttpAgent, request as httpRequest, type ClientRequest, type IncomingMessage, type OutgoingHttpHeaders } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { decodeLine, WireError, type RpcId } from '../../wire/message.js';
import { isJsonObject } from '../../core/json.js';
import { SseError, SseParser, type SseEvent } from '../../wire/sse.js';
import { log } from '../../telemetry/log.js';
import { digestBytes as digestOf } from '../../core/digest.js';
import type { InboundFrame, RequestLost, Transport, TransportClosed } from '../transport.js';
import { MAX_SERVER_LINE } from './process.js';
import { UpstreamHeaderError } from './headers.js';

/** What may go on Mcp-Session-Id (the spec: visible ASCII), bounded. */
const SESSION_ID = /^[\x21-\x7e]{1,1024}$/;
const DELETE_TIMEOUT_MS = 2000;
const GET_RETRY_MS = [1000, 2000, 5000, 10_000, 30_000];

/** An upstream URL: http or https, no credentials (those go in --upstream-header), no fragment. */
export function parseUpstreamUrl(text: string): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new UpstreamHeaderError('--upstream-url is not a URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new UpstreamHeaderError('--upstream-url must be http: or https:');
  if (url.username || url.password) throw new UpstreamHeaderError('--upstream-url must not carry credentials: pass them with --upstream-header');
  url.hash = '';
  return url;
}

export interface HttpUpstreamOptions {
  url: URL;
  /** --upstream-header pairs, sent on every request. */
  headers?: [string, string][];
  /** One JSON body or SSE event at most (default as for a stdio server's line). */
  maxMessageBytes?: number;
  /** A diagnostic for the operator (stderr); never a header value or a payload. */
  say?: (message: string) => void;
  /**
   * How long a request's event stream may be resumed, from its first cut (default 60 s; the
   * CLI passes --call-timeout: by then the relay has given up on the call). A resumed stream
   * the server holds open without the reply is closed then, so none outlives its call.
   */
  resumeWindowMs?: number;
}

/** One request's traffic: its POST, then any GET that resumes its event stream. */
type Exchange = {
  req: ClientRequest;
  id: RpcId | undefined;
  done: boolean;
  timer?: NodeJS.Timeout;
  window?: NodeJS.Timeout;
  /** Its stream is being resumed (or waits to be). */
  resuming?: boolean;
  finish?: (lost: RequestLost | null) => void;
};

/** Where a request's event stream stands across resumptions (Streamable HTTP, "Resumability and Redelivery"). */
interface Resumption {
  /** The last event id the server gave on this stream (priming events count). */
  lastId?: string;
  /** The server's `retry:` (ms), bounded by RESUME_MAX_WAIT_MS. */
  retryMs?: number;
  /** Resumptions so far, and those in a row that brought no new event id. */
  count: number;
  idle: number;
  /** The stream read now is a resumed one (GET with Last-Event-ID). */
  resumed: boolean;
}
/** Bounds on resuming one request's stream: never an endless loop against a server that cuts. */
const MAX_RESUMES = 20;
const MAX_IDLE_RESUMES = 3;
const RESUME_DEFAULT_MS = 500;
const RESUME_MAX_WAIT_MS = 5000;
const DEFAULT_RESUME_WINDOW_MS = 60_000;

export class HttpUpstreamTransport implements Transport {
  onframe?: (frame: InboundFrame) => void;
  onclose?: (info: TransportClosed) => void;
  onlost?: (id: RpcId, lost: RequestLost) => void;
  onerror?: (error: Error) => void;
  private readonly url: URL;
  private readonly agent: HttpAgent;
  private readonly request: typeof httpRequest;
  private readonly max: number;
  /** Where diagnostics name the server: origin and path, never the query. */
  readonly named: string;
  private sessionId: string | undefined;
  private protocolVersion: string | undefined;
  private readonly exchanges = new Set<Exchange>();
  /** The exchange that carries each request id now (a reused id supersedes an answered one). */
  private readonly current = new Map<string, Exchange>();
  private stream: ClientRequest | undefined;
  private streamWanted = false;
  private streamRetries = 0;
  private streamTimer: NodeJS.Timeout | undefined;
  private lastEventId: string | undefined;
  private closed = false;
  // Bodies and event streams being read: paused while the host reads nothing (the relay's
  // pause()), so what waits for the host stays bounded and the rest waits in the sockets.
  private readonly reading = new Set<IncomingMessage>();
  private paused = false;

  constructor(private readonly o: HttpUpstreamOptions) {
    this.url = o.url;
    const https = o.url.protocol === 'https:';
    // No Nagle: a request is one small write the server must see now (delayed ACKs cost 40 ms).
    this.agent = https ? new HttpsAgent({ keepAlive: true, noDelay: true }) : new HttpAgent({ keepAlive: true, noDelay: true });
    this.request = https ? (httpsRequest as unknown as typeof httpRequest) : httpRequest;
    this.max = o.maxMessageBytes ?? MAX_SERVER_LINE;
    this.named = o.url.origin + o.url.pathname;
  }

  /** Nothing to start: the host's initialize opens the upstream session. */
  async start(): Promise<void> {}

  /** Stop reading the server's bodies and streams (the host is not reading what the gate sends it). */
  pause(): void {
    this.paused = true;
    for (const res of this.reading) res.pause();
  }

  resume(): void {
    this.paused = false;
    for (const res of this.reading) res.resume();
  }

  /** `res` is read from now on (its 'data' listener is on): it pauses and resumes with the others. */
  private reads(res: IncomingMessage): void {
    this.reading.add(res);
    res.on('close', () => this.reading.delete(res));
    if (this.paused) res.pause();
  }

  /** The session id the server gave (tests, diagnostics): never logged. */
  get session(): string | undefined {
    return this.sessionId;
  }

  send(message: string): void {
    if (this.closed) return;
    // The relay's own RFC 8785 output: what kind of message it is, read back.
    const msg = JSON.parse(message) as Record<string, unknown>;
    const request = typeof msg.method === 'string' && 'id' in msg;
    const id = request ? (msg.id as RpcId) : undefined;
    this.post(message, id, msg.method === 'initialize', msg.method === 'notifications/initialized');
    if (msg.method === 'notifications/cancelled') this.withdrawn((msg.params as { requestId?: unknown } | undefined)?.requestId);
  }

  /**
   * The host withdrew a request (the server has just been told): a stream being resumed for it
   * is closed now rather than when the call times out; its outcome stays unknown.
   */
  private withdrawn(requestId: unknown): void {
    if (typeof requestId !== 'string' && typeof requestId !== 'number') return;
    const ex = this.current.get(JSON.stringify(requestId));
    if (!ex || !ex.resuming || ex.done) return;
    ex.finish?.({ cause: 'upstream_resume_cancelled', gone: false });
    ex.req.destroy();
  }

  /**
   * The relay gave up on a request: its exchange is closed, or a server that honours the
   * cancellation (and so never answers) would hold its event stream open for good.
   */
  forget(id: RpcId): void {
    const key = JSON.stringify(id);
    const ex = this.current.get(key);
    if (!ex || ex.done) return;
    this.current.delete(key); // so its end reports nothing
    ex.finish?.(null);
    ex.req.destroy();
  }

  private headers(extra: OutgoingHttpHeaders): OutgoingHttpHeaders {
    const h: OutgoingHttpHeaders = {};
    for (const [k, v] of this.o.headers ?? []) h[k] = v;
    if (this.sessionId !== undefined) h['mcp-session-id'] = this.sessionId;
    if (this.protocolVersion !== undefined) h['mcp-protocol-version'] = this.protocolVersion;
    return { ...h, ...extra };
  }

  private post(body: string, id: RpcId | undefined, initialize: boolean, initialized: boolean): void {
    const req = this.request(this.url, {
      method: 'POST',
      agent: this.agent,
      headers: this.headers({ 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'content-length': Buffer.byteLength(body) }),
    });
    req.setNoDelay(true);
    const ex: Exchange = { req, id, done: false };
    this.exchanges.add(ex);
    if (id !== undefined) this.current.set(JSON.stringify(id), ex);
    let answered = false;
    const finish = (lost: RequestLost | null) => {
      if (answered) return;
      answered = true;
      ex.done = true;
      clearTimeout(ex.timer);
      clearTimeout(ex.window);
      this.exchanges.delete(ex);
      if (id === undefined || this.closed) return;
      const key = JSON.stringify(id);
      if (this.current.get(key) !== ex) return; // the id was answered and reused since
      this.current.delete(key);
      // The exchange is over: if the relay still waits for this id, the answer is not coming.
      this.onlost?.(id, lost ?? { cause: 'no_answer', gone: false });
    };
    ex.finish = finish;
    req.on('error', () => finish({ cause: 'upstream_unreachable', gone: true }));
    req.on('response', (res) => {
      this.answer(res, ex, initialize, initialized, finish);
    });
    req.end(body);
  }

  /** One POST's answer: its status, headers and body or event stream. */
  private answer(res: IncomingMessage, ex: Exchange, initialize: boolean, initialized: boolean, finish: (lost: RequestLost | null) => void): void {
    const id = ex.id;
    const status = res.statusCode ?? 0;
    if (status === 404 && this.sessionId !== undefined) {
      discard(res);
      finish({ cause: 'upstream_session_lost', gone: true });
      return this.lose('the server no longer knows the session (404)');
    }
    if (id === undefined && (status === 200 || status === 202)) {
      // A notification or response has no answer to wait for (the server "MUST" answer it 202,
      // no body). An event stream sent anyway is not read: one the server held open kept its
      // socket until the session ended, one more with each notification the host sent.
      if (mediaType(res) === 'text/event-stream') {
        dropped('upstream_body_unasked', null);
        res.destroy();
      } else discard(res);
      if (initialized) this.openStream();
      return finish(null);
    }
    if (status === 202) {
      discard(res);
      return finish({ cause: 'no_answer', gone: false });
    }
    if (status !== 200) {
      if (status === 401 || status === 403) this.o.say?.(`the upstream ${this.named} refused the request (HTTP ${status}): check --upstream-header`);
      res.destroy();
      return finish({ cause: `upstream_http_${status}`, gone: false });
    }
    if (initialize) {
      const sid = header(res, 'mcp-session-id');
      if (sid !== undefined && !SESSION_ID.test(sid)) {
        res.destroy();
        return finish({ cause: 'upstream_session_id_invalid', gone: false });
      }
      this.sessionId = sid;
    }
    const type = mediaType(res);
    if (type === 'application/json') return this.readJson(res, initialize, finish);
    if (type === 'text/event-stream') return this.readReplyEvents(res, ex, initialize, finish, { count: 0, idle: 0, resumed: false });
    res.destroy();
    finish({ cause: 'upstream_content_type', gone: false });
  }

  private readJson(res: IncomingMessage, initialize: boolean, finish: (lost: RequestLost | null) => void): void {
    const declared = Number(header(res, 'content-length'));
    if (Number.isFinite(declared) && declared > this.max) {
      res.destroy();
      return finish({ cause: 'frame_too_large', gone: false });
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let over = false;
    res.on('data', (c: Buffer) => {
      if (over) return;
      size += c.length;
      if (size > this.max) {
        over = true;
        res.destroy();
        return finish({ cause: 'frame_too_large', gone: false });
      }
      chunks.push(c);
    });
    this.reads(res);
    res.on('end', () => {
      if (over) return;
      const bytes = Buffer.concat(chunks);
      if (initialize) this.noteVersion(bytes);
      this.deliver(bytes);
      finish(null);
    });
    res.on('error', () => finish({ cause: 'upstream_body_cut', gone: false }));
    res.on('close', () => {
      if (!res.complete && !over) finish({ cause: 'upstream_body_cut', gone: false });
    });
  }

  /**
   * A request's event stream: each `message` event is one frame, the stream ends after the
   * reply. A stream that ends or breaks before the reply is resumed (GET with Last-Event-ID)
   * when the server gave it event ids, within bounds; the resumed stream is read just as
   * strictly, and on it only this request's reply is taken (a replayed reply to another id is
   * dropped: that id may be a new request's by now). No ids, or resumption failing: the request
   * ends as a broken stream does (a write's outcome is unknown), nothing replayed.
   */
  private readReplyEvents(res: IncomingMessage, ex: Exchange, initialize: boolean, finish: (lost: RequestLost | null) => void, at: Resumption): void {
    let replied = false;
    let over = false;
    const { parser, broken } = this.readSse(res, finish, (events) => {
      if (parser.dispatchedId !== undefined && parser.dispatchedId !== at.lastId) {
        at.lastId = parser.dispatchedId;
        at.idle = 0;
      }
      if (parser.retryMs !== undefined) at.retryMs = parser.retryMs;
      for (const ev of events) {
        const reply = replyTo(ev.data, ex.id, this.max);
        if (at.resumed && reply === 'another') {
          dropped('sse_resumed_other_reply', ev.data);
          continue;
        }
        if (initialize) this.noteVersion(ev.data);
        this.deliver(ev.data);
        if (reply === 'this') replied = true;
      }
      if (replied && !over && !res.complete) {
        // The reply is in and the server "SHOULD" close the stream now: one it holds open would
        // keep this socket until the session ends, one more with each call. (Once complete, the
        // socket may already carry another request: never destroyed then.)
        over = true;
        res.destroy();
        finish(null);
      }
    });
    const end = (cut: boolean) => {
      if (broken() || over) return;
      over = true;
      if (parser.end()) dropped('sse_event_cut', null); // the format discards a cut-off event
      if (!replied && ex.id !== undefined && at.lastId !== undefined && !ex.done && !this.closed) return this.resumeStream(ex, initialize, finish, at);
      finish(cut ? { cause: 'upstream_stream_cut', gone: false } : null);
    };
    res.on('end', () => end(false));
    res.on('close', () => {
      if (!res.complete) end(true);
    });
  }

  /** GET the request's stream again from its last event id, after the server's retry delay. */
  private resumeStream(ex: Exchange, initialize: boolean, finish: (lost: RequestLost | null) => void, at: Resumption): void {
    at.count++;
    at.idle++;
    ex.resuming = true;
    if (at.count > MAX_RESUMES || at.idle > MAX_IDLE_RESUMES) return finish({ cause: 'upstream_resume_failed', gone: false });
    if (at.count === 1) {
      ex.window = setTimeout(() => {
        finish({ cause: 'upstream_resume_failed', gone: false });
        ex.req.destroy();
      }, this.o.resumeWindowMs ?? DEFAULT_RESUME_WINDOW_MS);
      ex.window.unref();
    }
    const wait = Math.min(at.retryMs ?? RESUME_DEFAULT_MS, RESUME_MAX_WAIT_MS);
    ex.timer = setTimeout(() => {
      if (this.closed || ex.done) return;
      const req = this.request(this.url, {
        method: 'GET',
        agent: this.agent,
        headers: this.headers({ accept: 'text/event-stream', 'last-event-id': at.lastId! }),
      });
      ex.req = req;
      let answered = false;
      // No answer at all (refused, reset): another try within the bounds. Once answered, the
      // stream's own end decides (one resumption at a time).
      req.on('error', () => answered || this.resumeStream(ex, initialize, finish, at));
      req.on('response', (res) => {
        answered = true;
        const status = res.statusCode ?? 0;
        if (status === 404 && this.sessionId !== undefined) {
          discard(res);
          finish({ cause: 'upstream_session_lost', gone: true });
          return this.lose('the server no longer knows the session (404)');
        }
        if (status !== 200 || mediaType(res) !== 'text/event-stream') {
          // The server will not resume (405: no GET streams; 400: the id is unknown to it).
          discard(res);
          return finish({ cause: 'upstream_resume_refused', gone: false });
        }
        at.resumed = true;
        this.readReplyEvents(res, ex, initialize, finish, at);
      });
      req.end();
    }, wait);
  }

  /** The server's own stream (GET): each `message` event is one frame. */
  private readEvents(res: IncomingMessage, finish: (lost: RequestLost | null) => void, onEnd: () => void, onId: (id: string) => void): void {
    const { parser, broken } = this.readSse(res, finish, (events) => {
      if (parser.dispatchedId !== undefined) onId(parser.dispatchedId);
      for (const ev of events) this.deliver(ev.data);
    });
    res.on('end', () => {
      if (broken()) return;
      if (parser.end()) dropped('sse_event_cut', null); // the format discards a cut-off event
      finish(null);
      onEnd();
    });
    res.on('close', () => {
      if (!broken() && !res.complete) {
        finish({ cause: 'upstream_stream_cut', gone: false });
        onEnd();
      }
    });
  }

  /**
   * Reads `res` as an event stream, strictly: `take` gets the `message` events of each chunk
   * (other types are dropped, named); a malformed stream is destroyed and ends with its cause.
   */
  private readSse(res: IncomingMessage, finish: (lost: RequestLost | null) => void, take: (events: SseEvent[]) => void): { parser: SseParser; broken: () => boolean } {
    const parser = new SseParser(this.max);
    let broken = false;
    res.on('data', (c: Buffer) => {
      if (broken) return;
      let events;
      try {
        events = parser.push(c);
      } catch (e) {
        if (!(e instanceof SseError)) throw e;
        broken = true;
        res.destroy();
        return finish({ cause: e.cause, gone: false });
      }
      take(
        events.filter((ev) => {
          if (ev.type === undefined || ev.type === 'message') return true;
          dropped('sse_event_type', ev.data);
          return false;
        }),
      );
    });
    res.on('error', () => undefined);
    this.reads(res);
    return { parser, broken: () => broken };
  }

  private deliver(bytes: Uint8Array): void {
    if (!this.closed) this.onframe?.({ kind: 'frame', bytes });
  }

  /** The protocol version the server chose at initialize, sent on every later request. */
  private noteVersion(bytes: Uint8Array): void {
    try {
      const m = decodeLine(bytes, { maxLineBytes: this.max });
      if (m.kind !== 'response') return;
      const r = m.msg.result;
      if (isJsonObject(r ?? null) && typeof (r as Record<string, unknown>).protocolVersion === 'string') {
        const v = (r as Record<string, unknown>).protocolVersion as string;
        if (/^[\x21-\x7e]{1,64}$/.test(v)) this.protocolVersion = v;
      }
    } catch (e) {
      if (!(e instanceof WireError)) throw e; // the relay drops the unreadable answer itself
    }
  }

  /** The GET stream for the server's own requests and notifications (optional: 405 means none). */
  private openStream(): void {
    if (this.closed || this.stream) return;
    this.streamWanted = true;
    const req = this.request(this.url, {
      method: 'GET',
      agent: this.agent,
      headers: this.headers({ accept: 'text/event-stream', ...(this.lastEventId !== undefined ? { 'last-event-id': this.lastEventId } : {}) }),
    });
    this.stream = req;
    const again = () => {
      if (this.stream === req) this.stream = undefined;
      if (this.closed || !this.streamWanted) return;
      const wait = GET_RETRY_MS[Math.min(this.streamRetries++, GET_RETRY_MS.length - 1)];
      this.streamTimer = setTimeout(() => this.openStream(), wait);
      this.streamTimer.unref();
    };
    req.on('error', again);
    req.on('response', (res) => {
      const status = res.statusCode ?? 0;
      if (status === 404 && this.sessionId !== undefined) {
        discard(res);
        return this.lose('the server no longer knows the session (404)');
      }
      if (status !== 200 || mediaType(res) !== 'text/event-stream') {
        // 405: the server offers no stream. Anything else: not retried either.
        discard(res);
        this.streamWanted = false;
        if (this.stream === req) this.stream = undefined;
        return;
      }
      this.streamRetries = 0;
      // Only this stream's own event ids resume it (a POST stream's ids name another stream).
      this.readEvents(res, (lost) => lost && dropped(lost.cause, null), again, (id) => (this.lastEventId = id));
    });
    req.end();
  }

  /** The server lost the session: every request ends, the relay ends the gate session. */
  private lose(why: string): void {
    if (this.closed) return;
    log.warn('upstream_session_lost', {});
    this.o.say?.(`the upstream ${this.named}: ${why}; the session ends`);
    void this.shut({ code: null }, false);
  }

  async close(): Promise<void> {
    await this.shut({ code: 0 }, true);
  }

  private async shut(info: TransportClosed, politely: boolean): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearTimeout(this.streamTimer);
    this.stream?.destroy();
    for (const ex of this.exchanges) {
      clearTimeout(ex.timer);
      clearTimeout(ex.window);
      ex.req.destroy();
    }
    this.exchanges.clear();
    this.current.clear();
    // Tell the server the session is over (best effort, bounded): DELETE with its id.
    if (politely && this.sessionId !== undefined) {
      await new Promise<void>((resolve) => {
        const req = this.request(this.url, { method: 'DELETE', agent: this.agent, headers: this.headers({}), timeout: DELETE_TIMEOUT_MS });
        req.on('response', (res) => {
          res.resume();
          resolve();
        });
        req.on('timeout', () => req.destroy());
        req.on('error', () => resolve());
        req.on('close', () => resolve());
        req.end();
      });
    }
    this.agent.destroy();
    const cb = this.onclose;
    this.onclose = undefined;
    cb?.(info);
  }
}

function header(res: IncomingMessage, name: string): string | undefined {
  const v = res.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

function mediaType(res: IncomingMessage): string {
  return (header(res, 'content-type') ?? '').split(';')[0].trim().toLowerCase();
}

/** How long, and how much of, a body nobody reads is drained before its connection is closed instead. */
const DISCARD_MS = 1000;
const DISCARD_BYTES = 64 * 1024;

/**
 * A body nobody reads (the answer to a notification, a 202, a 404): drained, so the connection
 * goes back to the pool, while it ends at once (an empty chunked body does); one that goes on
 * is cut, or it held a connection and a descriptor for as long as the server liked.
 */
function discard(res: IncomingMessage): void {
  if (header(res, 'content-length') === '0') return void res.resume();
  let size = 0;
  const timer = setTimeout(() => res.destroy(), DISCARD_MS);
  timer.unref();
  res.on('data', (c: Buffer) => {
    size += c.length;
    if (size > DISCARD_BYTES) res.destroy();
  });
  res.on('close', () => clearTimeout(timer));
  res.resume();
}

function hasBody(res: IncomingMessage): boolean {
  const len = header(res, 'content-length');
  return !(len === '0' || (len === undefined && header(res, 'transfer-encoding') === undefined));
}

/** Whether an event is the reply to `id`, a reply to another id, or something else (a request, a notification, unreadable: the relay judges those). */
function replyTo(bytes: Uint8Array, id: RpcId | undefined, max: number): 'this' | 'another' | 'other' {
  let m;
  try {
    m = decodeLine(bytes, { maxLineBytes: max });
  } catch (e) {
    if (!(e instanceof WireError)) throw e;
    return 'other';
  }
  if (m.kind !== 'response') return 'other';
  return id !== undefined && m.id === id ? 'this' : 'another';
}

function dropped(cause: string, bytes: Uint8Array | null): void {
  log.warn('upstream_message_dropped', { cause, ...(bytes ? { line_digest: digestOf(bytes) } : {}) });
}
