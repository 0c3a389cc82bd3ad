// The HTTP door: MCP Streamable HTTP (revisions 2025-03-26, 2025-06-18, 2025-11-25) in front of
// the gate. Each MCP session is a gate session, a relay and an upstream connection of its own.
// Bodies go through the same strict parser as a stdio line before anything else reads them.
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { boundedServer } from '../util/http-server.js';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { decodeLine, WireError, type RpcId, type RpcMessage } from '../wire/message.js';
import { scanId } from '../wire/id-scan.js';
import { ContextSource } from '../contract/context.js';
import { digestBytes } from '../core/digest.js';
import type { JsonObject } from '../core/json.js';
import type { RefusalCode } from '../core/refusal.js';
import type { SessionEndReason } from '../core/entries.js';
import type { Gate, Who } from '../gate/gate.js';
import type { GateSession } from '../gate/session.js';
import { Relay } from './relay.js';
import { DEFAULT_MAX_CONNECTIONS, SESSIONLESS_BYTES } from './limits.js';
import type { Transport } from './transport.js';
import { CONTROL_BYTES, HttpSessionTransport, WAITING_UNREAD } from './http.js';
import { ByteBudget } from '../util/byte-budget.js';
import { refusalResponse } from './responses.js';
import { readBodyUpTo } from '../util/request-body.js';
import { hostnameOf, isLoopback, loopbackNames, originAllowed, requestHost, type Principal } from './http-auth.js';
import { allowOrigin, answerPreflight, isPreflight } from './http-cors.js';

/** Checks a request's `Authorization` header: the agent it names, or null (401). */
export interface Authenticator {
  check(authorization: string | undefined): Principal | null | Promise<Principal | null>;
  /** The authorization server that issues the tokens (RFC 9728 `authorization_servers`). */
  readonly issuer?: string;
}

export const PROTOCOL_VERSIONS = ['2025-03-26', '2025-06-18', '2025-11-25'] as const;
const TASK_NAME = /^[A-Za-z0-9._-]{1,128}$/;
const WELL_KNOWN = '/.well-known/oauth-protected-resource';

export interface HttpDoorOptions {
  gate: Gate;
  /** A new upstream connection for one session (a process, or a remote session). */
  upstream: () => Transport;
  path: string;
  maxBodyBytes: number;
  maxSessions: number;
  /** Client connections open at once; one beyond is closed as it comes (ADR 085). */
  maxConnections?: number;
  /** Per session: requests in flight past which its relay stops taking bodies. */
  maxInFlight?: number;
  /** Pass the server's whole tools/list, undeclared tools included. */
  listUndeclared?: boolean;
  sessionIdleMs: number;
  /** Every session's context file, or the folder of `TASK.json` files named by `Cloakpipe-Task`. */
  context?: { file: string } | { dir: string };
  /** Who may call: static tokens or JWTs; absent, anyone who reaches the (loopback) port. */
  tokens?: Authenticator;
  allowedOrigins: string[];
  /** The agent of a session without a token (`--agent`, else the gate's). */
  agent?: string;
  /** Serve HTTPS with this certificate chain and key (PEM). */
  tls?: { cert: Buffer; key: Buffer };
  /** The MCP endpoint as clients reach it: the RFC 9728 `resource` (--public-url, else the listen address). */
  publicUrl: () => URL;
  say: (message: string) => void;
}

interface Session {
  id: string;
  /** Why it ended, once something ended it (else its upstream went). */
  ended?: SessionEndReason;
  transport: HttpSessionTransport;
  relay: Relay;
  principal: Principal | null;
  /** Its gate session: whom its refusals are tied to in the ledger (its digest and agent). */
  gate: GateSession;
  idle: NodeJS.Timeout | undefined;
  done: Promise<void>;
}

/** The client hung up while its body waited to be read: nobody to answer. */
class ClientGone extends Error {}

const rpcError = (code: number, message: string, id: RpcId | null = null): JsonObject => ({ jsonrpc: '2.0', id, error: { code, message } });

export class HttpDoor {
  readonly server: Server;
  private readonly sessions = new Map<string, Session>();
  /**
   * Sessions whose relay still runs: the live ones and those ended (DELETE, idle) whose calls
   * still finish, each with its upstream. They count against --max-sessions, or a host could
   * keep any number of upstreams alive by opening, calling and deleting.
   */
  private readonly running = new Set<Session>();
  /** Sessions whose open entry is being recorded (they count against --max-sessions). */
  private opening = 0;
  /** Opens in progress: drain waits for them, so none starts or is recorded past the shutdown entry. */
  private readonly openings = new Set<Promise<unknown>>();
  private draining = false;
  /** Bytes of the bodies no session admits, read at once (ADR 092). */
  private readonly sessionless: ByteBudget;
  /** On a loopback listen, the host names a request may name (listen()); else any. */
  private hostnames: ReadonlySet<string> | null = null;

  constructor(private readonly o: HttpDoorOptions) {
    this.sessionless = new ByteBudget(Math.max(SESSIONLESS_BYTES, o.maxBodyBytes));
    const handler = (req: IncomingMessage, res: ServerResponse) => {
      this.handle(req, res).catch((e) => {
        if (e instanceof ClientGone) return void res.destroy();
        if (!res.headersSent) send(res, 500, rpcError(-32603, 'cloakpipe: internal error'));
        else res.end();
      });
    };
    this.server = boundedServer(handler, o.tls, o.maxConnections ?? DEFAULT_MAX_CONNECTIONS);
  }

  get sessionCount(): number {
    return this.sessions.size;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://gate');
    // DNS rebinding: a page whose name resolves to loopback is same-origin to its own name, and
    // sends no Origin on its same-origin GETs. Only its name in Host tells it from a local client.
    if (this.hostnames && !this.hostnames.has(hostnameOf(requestHost(req)) ?? '')) return send(res, 403, rpcError(-32000, 'Forbidden: the Host header does not name this gate (a loopback name or --public-url)'));
    const origin = header(req, 'origin');
    // Every answer depends on Origin (403, or CORS headers naming it): caches must key on it.
    res.setHeader('Vary', 'Origin');
    if (!originAllowed(origin, this.o.allowedOrigins)) return send(res, 403, rpcError(-32000, 'Forbidden: origin not allowed'));
    if (origin !== undefined) allowOrigin(res, origin);
    const metadata = url.pathname.startsWith(WELL_KNOWN) && this.o.tokens !== undefined;
    if (isPreflight(req)) {
      // Before the token check (a browser sends none on a preflight), and nothing else runs.
      if (metadata) return answerPreflight(res, ['GET']);
      if (url.pathname === this.o.path) return answerPreflight(res, ['POST', 'GET', 'DELETE']);
      return send(res, 404, rpcError(-32000, 'Not Found'));
    }
    if (metadata && req.method === 'GET') {
      const issuer = this.o.tokens?.issuer;
      return send(res, 200, { resource: this.o.publicUrl().href, bearer_methods_supported: ['header'], ...(issuer !== undefined ? { authorization_servers: [issuer] } : {}) });
    }
    if (url.pathname !== this.o.path) return send(res, 404, rpcError(-32000, 'Not Found'));
    if (this.draining) return send(res, 503, rpcError(-32000, 'Service Unavailable: shutting down'), { Connection: 'close' });
    let principal: Principal | null = null;
    if (this.o.tokens) {
      principal = await this.o.tokens.check(header(req, 'authorization'));
      if (!principal) {
        return send(res, 401, rpcError(-32000, 'Unauthorized'), {
          'WWW-Authenticate': `Bearer resource_metadata="${metadataUrl(this.o.publicUrl())}"`,
        });
      }
    }
    const version = header(req, 'mcp-protocol-version');
    if (version !== undefined && !(PROTOCOL_VERSIONS as readonly string[]).includes(version)) {
      const why = `Bad Request: unsupported MCP-Protocol-Version (supported: ${PROTOCOL_VERSIONS.join(', ')})`;
      if (req.method === 'POST') return this.refuseUnread(req, res, 400, why, this.whoOf(this.usable(req, principal), principal));
      return send(res, 400, rpcError(-32000, why));
    }
    switch (req.method) {
      case 'POST':
        return this.post(req, res, principal);
      case 'GET':
      case 'DELETE': {
        const s = this.sessionOf(req, res, principal);
        if (!s) return;
        if (req.method === 'DELETE') {
          this.endSession(s, 'deleted');
          return send(res, 200, null);
        }
        if (accepts(req, 'text/event-stream') <= 0) return send(res, 406, rpcError(-32000, 'Not Acceptable: the GET stream is text/event-stream'));
        return s.transport.openStream(res);
      }
      default:
        return send(res, 405, rpcError(-32000, 'Method Not Allowed'), { Allow: 'GET, POST, DELETE' });
    }
  }

  /** The live session a request names, or the answer that it names none (400) or no live one (404). */
  private sessionOf(req: IncomingMessage, res: ServerResponse, principal: Principal | null): Session | null {
    const id = header(req, 'mcp-session-id');
    if (id === undefined) {
      send(res, 400, rpcError(-32000, 'Bad Request: Mcp-Session-Id header is required'));
      return null;
    }
    const s = this.sessions.get(id);
    // A session is its opener's: another token's holder cannot even learn it exists.
    if (!s || (s.principal && s.principal.agent !== principal?.agent)) {
      send(res, 404, rpcError(-32001, 'Session not found'));
      return null;
    }
    this.touch(s);
    return s;
  }

  private async post(req: IncomingMessage, res: ServerResponse, principal: Principal | null): Promise<void> {
    const named = this.usable(req, principal);
    const who = this.whoOf(named, principal);
    const type = header(req, 'content-type') ?? '';
    if (!/^application\/json\b/i.test(type)) return this.refuseUnread(req, res, 415, 'Unsupported Media Type: the body must be application/json', who);
    const json = accepts(req, 'application/json');
    const sse = accepts(req, 'text/event-stream');
    if (json <= 0 && sse <= 0) return this.refuseUnread(req, res, 406, 'Not Acceptable: application/json or text/event-stream', who);
    // A stream unless the client prefers JSON (SSE also carries the call's requests to the host).
    const wantsSse = sse > 0 && sse >= json;
    // Past --max-in-flight a body waits unread (bounded), not read whole into the gate.
    if (named) this.touch(named); // a request that waits to be read is not idleness
    // A body of no declared length (chunked) shows whether it is small by its first CONTROL_BYTES:
    // a cancel sent so must not wait behind the call it ends. What is read waits as a small one's.
    const head = named && declaredLength(req) === undefined ? await readHead(req, CONTROL_BYTES) : undefined;
    const declared = head ? (head.ended ? head.bytes : undefined) : declaredLength(req);
    if (named && !(await named.transport.admit(req, declared))) {
      if (!this.sessions.has(named.id)) return send(res, 404, rpcError(-32001, 'Session not found'));
      return send(res, 503, rpcError(-32000, `Service Unavailable: ${WAITING_UNREAD} requests of this session wait for calls to end`), { 'Retry-After': '1', Connection: 'close' });
    }
    let body: Uint8Array | null;
    if (named) {
      try {
        body = await readBody(req, this.o.maxBodyBytes, head);
      } finally {
        named.transport.done();
      }
    } else body = await this.readSessionless(req);
    if (body === null) return this.refuse(res, 413, 'frame_too_large', `body longer than ${this.o.maxBodyBytes} bytes`, new Uint8Array(), null, who, true);
    let msg: RpcMessage;
    try {
      msg = decodeLine(body, { maxLineBytes: this.o.maxBodyBytes });
    } catch (e) {
      if (!(e instanceof WireError)) throw e;
      // The id by the relay's bounded top-level scan, not a strict parse: a body refused for its
      // content (cut short, a lone surrogate, a duplicate key further in) still names the request
      // it answers, as the same line does on stdio (product.md section 1).
      return this.refuse(res, 400, e.code, e.detail, body, scanId(body), who);
    }
    let s: Session | null;
    if (msg.kind === 'request' && msg.method === 'initialize') {
      if (header(req, 'mcp-session-id') !== undefined) return send(res, 400, rpcError(-32600, 'Invalid Request: initialize opens a session; it names none', msg.id));
      const opening = this.open(req, res, principal, body, msg.id);
      this.openings.add(opening);
      try {
        s = await opening;
      } finally {
        this.openings.delete(opening);
      }
      if (!s) return;
      res.setHeader('Mcp-Session-Id', s.id);
    } else {
      // A message for no live session of the sender's: recorded, as a refusal of what it carried (a call, maybe).
      if (!this.usable(req, principal)) {
        const missing = header(req, 'mcp-session-id') === undefined;
        return this.refuseHttp(res, missing ? 400 : 404, missing ? 'Bad Request: Mcp-Session-Id header is required' : 'Session not found', body, who, missing ? -32000 : -32001);
      }
      s = this.sessionOf(req, res, principal);
      if (!s) return;
    }
    // The relay would refuse and record it too, but only after this door had answered 202: MCP's
    // Streamable HTTP transport keeps 202 for a message the server accepts, and a refused one
    // gets an error status (400, the refusal as the body, no id to name).
    if (msg.kind === 'notification' && msg.method === 'tools/call') return this.refuse(res, 400, 'invalid_request', 'a tools/call must be a request (it has no id)', body, null, who);
    if (msg.kind !== 'request') {
      s.transport.post(body, null, res, false, msg.kind === 'notification' && msg.method === 'notifications/cancelled' ? cancelledId(msg.params) : undefined);
      res.writeHead(202).end();
      return;
    }
    // Answers are routed to their POST by id: a second POST with an id still waiting would take
    // the first one's place, and the first call's answer (a write that ran) would reach nobody.
    // The relay refuses an id in flight too, but only here can its refusal go to the right POST.
    if (s.transport.waits(msg.id)) return this.refuse(res, 400, 'invalid_request', 'a request with this id is already in flight', body, msg.id, who);
    const token = progressToken(msg.params);
    s.transport.post(body, { id: msg.id, ...(token !== undefined ? { progressToken: token } : {}) }, res, wantsSse);
  }

  /** A new MCP session: its context, gate session, upstream and relay. Null when refused (answered). */
  private async open(req: IncomingMessage, res: ServerResponse, principal: Principal | null, body: Uint8Array, id: RpcId): Promise<Session | null> {
    // A body still being read when shutdown began: drain's list of sessions is already taken.
    if (this.draining) {
      send(res, 503, rpcError(-32000, 'Service Unavailable: shutting down', id), { Connection: 'close' });
      return null;
    }
    if (this.running.size + this.opening >= this.o.maxSessions) {
      send(res, 503, rpcError(-32000, `Service Unavailable: ${this.o.maxSessions} sessions are open`, id), { 'Retry-After': '5' });
      return null;
    }
    let context: ContextSource | undefined;
    try {
      if (this.o.context && 'file' in this.o.context) context = new ContextSource(this.o.context.file);
      else if (this.o.context) {
        const task = header(req, 'cloakpipe-task');
        if (task === undefined || !TASK_NAME.test(task)) throw new Error('the initialize names no valid Cloakpipe-Task');
        const file = join(this.o.context.dir, `${task}.json`);
        if (!existsSync(file)) throw new Error('no context file for the Cloakpipe-Task');
        context = new ContextSource(file);
      }
    } catch (e) {
      void this.refuse(res, 400, 'fail_closed', (e as Error).message.startsWith('the initialize') || (e as Error).message.startsWith('no context') ? (e as Error).message : 'the task context does not load', body, id, principal ? { agent: principal.agent } : {});
      return null;
    }
    const sid = randomBytes(32).toString('base64url');
    // A token's agent, else --agent; else the gate takes it from the session's task context at
    // each decision (it follows a context rewritten for another agent).
    const agent = principal?.agent ?? this.o.agent;
    let gateSession;
    this.opening++;
    try {
      gateSession = await this.o.gate.openRecordedSession({
        ...(context ? { context } : {}),
        ...(agent !== undefined ? { agent } : {}),
        digest: digestBytes(Buffer.from(sid, 'utf8')),
      });
    } catch {
      void this.refuse(res, 500, 'fail_closed', 'the session could not be recorded', body, id, agent !== undefined ? { agent } : {});
      return null;
    } finally {
      this.opening--;
    }
    if (this.draining) {
      // Shutdown began while the open entry was written: it is closed now (drain waits for this,
      // so before the shutdown entry) and no upstream starts, which nothing would ever stop.
      await this.o.gate.closeRecordedSession(gateSession, 'shutdown');
      send(res, 503, rpcError(-32000, 'Service Unavailable: shutting down', id), { Connection: 'close' });
      return null;
    }
    const transport = new HttpSessionTransport();
    const relay = new Relay({
      gate: this.o.gate.view(gateSession),
      host: transport,
      upstream: this.o.upstream(),
      maxLineBytes: this.o.maxBodyBytes,
      ...(this.o.maxInFlight !== undefined ? { maxInFlight: this.o.maxInFlight } : {}),
      requestTimeoutMs: this.o.gate.callTimeoutMs,
      listUndeclared: this.o.listUndeclared === true,
    });
    const s: Session = { id: sid, transport, relay, principal, gate: gateSession, idle: undefined, done: Promise.resolve() };
    s.done = relay.run().then(
      () => undefined,
      (e: Error) => this.o.say(`a session's upstream did not start: ${e.message}`),
    ).finally(() => {
      // The upstream exited or the session ended: the id is no longer live.
      this.running.delete(s);
      this.sessions.delete(sid);
      clearTimeout(s.idle);
      void transport.close();
      return this.o.gate.closeRecordedSession(gateSession, s.ended ?? 'upstream_exit');
    });
    this.sessions.set(sid, s);
    this.running.add(s);
    this.touch(s);
    return s;
  }

  private touch(s: Session): void {
    clearTimeout(s.idle);
    s.idle = setTimeout(() => {
      // A call running or waiting is not idle, nor a client listening on a GET stream (a dead
      // one's stream closes once TCP gives up on its heartbeats).
      if (s.transport.inFlight > 0 || s.transport.waitingUnread > 0 || s.transport.listening) return this.touch(s);
      this.endSession(s, 'idle');
    }, this.o.sessionIdleMs);
    s.idle.unref();
  }

  private endSession(s: Session, why: SessionEndReason): void {
    s.ended ??= why;
    this.sessions.delete(s.id);
    clearTimeout(s.idle);
    s.transport.end();
  }

  /** The live session a request names, when its sender may use it (a session is its opener's). */
  private usable(req: IncomingMessage, principal: Principal | null): Session | undefined {
    const found = this.sessions.get(header(req, 'mcp-session-id') ?? '');
    return found && (!found.principal || found.principal.agent === principal?.agent) ? found : undefined;
  }

  /** Whom a refusal is tied to in the ledger: the session the request names (its sender's: usable()), else the token's agent. */
  private whoOf(named: Session | undefined, principal: Principal | null): Who {
    return named ? this.o.gate.whoOf(named.gate) : principal ? { agent: principal.agent } : {};
  }

  /**
   * A POST of a caller who passed the token and origin checks, refused for its headers: its body
   * (bounded) is read for the entry's digest and the answer's id, and the refusal recorded, since
   * it may carry a call (ADR 086). Over --max-body it is not read further; the entry has no body.
   */
  private async refuseUnread(req: IncomingMessage, res: ServerResponse, status: number, message: string, who: Who): Promise<void> {
    const body = await this.readSessionless(req);
    if (body === null) res.setHeader('Connection', 'close');
    return this.refuseHttp(res, status, message, body ?? new Uint8Array(), who);
  }

  /**
   * A body no session admits, read once the door-wide budget holds its bytes (its Content-Length,
   * else --max-body); until then it waits unread. A small declared body (a cancel, an
   * initialize) does not wait behind large ones: the connection cap bounds what those hold.
   */
  private async readSessionless(req: IncomingMessage): Promise<Uint8Array | null> {
    const declared = declaredLength(req);
    const max = this.o.maxBodyBytes;
    if ((declared !== undefined && declared <= CONTROL_BYTES) || (declared ?? 0) > max) return readBody(req, max);
    const bytes = declared ?? max;
    if (!(await this.sessionless.take(bytes, req))) throw new ClientGone();
    try {
      return await readBody(req, max);
    } finally {
      this.sessionless.release(bytes);
    }
  }

  /** A refusal of the HTTP exchange (not of the body's content): recorded `invalid_request`, answered with its status. */
  private async refuseHttp(res: ServerResponse, status: number, message: string, line: Uint8Array, who: Who, code = -32000): Promise<void> {
    const id = line.length > 0 ? scanId(line) : null;
    const data = await this.o.gate.refuseWire('invalid_request', message, line, who);
    send(res, status, { jsonrpc: '2.0', id, error: { code, message, data: { reason: data.reason, entry: data.entry } } });
  }

  /** A wire refusal made here (the body never reached a relay): recorded, then answered. */
  private async refuse(res: ServerResponse, status: number, code: RefusalCode, detail: string, line: Uint8Array, id: RpcId | null, who: Who, close = false): Promise<void> {
    const data = await this.o.gate.refuseWire(code, detail, line, who);
    send(res, status, refusalResponse(id, data), close ? { Connection: 'close' } : {});
  }

  listen(port: number, host: string): Promise<void> {
    // Any port: a forwarded one (ssh -L) names its own. Set before the first connection can come.
    const names = isLoopback(host) ? loopbackNames(host) : null;
    this.hostnames = names;
    return new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, host, () => {
        this.server.off('error', reject);
        names?.add(this.o.publicUrl().hostname); // --public-url's: a local proxy's name
        resolve();
      });
    });
  }

  /**
   * Stop accepting, end every session (their calls finish, at most `graceMs`), stop the upstreams.
   * Past the grace each upstream is stopped, and a call still running ends as on its death
   * (outcome unknown): it is recorded before this returns, so before the shutdown entry.
   */
  async drain(graceMs: number): Promise<void> {
    this.draining = true;
    const closing = new Promise<void>((r) => this.server.close(() => r()));
    await Promise.allSettled([...this.openings]);
    const sessions = [...this.running];
    for (const s of [...this.sessions.values()]) this.endSession(s, 'shutdown');
    const ended = Promise.allSettled(sessions.map((s) => s.done));
    let timer: NodeJS.Timeout | undefined;
    const late = await Promise.race([ended.then(() => false), new Promise<boolean>((r) => (timer = setTimeout(() => r(true), graceMs)))]);
    clearTimeout(timer);
    if (late) {
      for (const s of sessions) s.relay.stopUpstream();
      await ended;
    }
    this.server.closeAllConnections();
    await closing;
  }
}

/**
 * RFC 9728 3.1: the metadata of a resource is at its origin, the well-known path, then its own
 * path, so two endpoints behind one origin each have theirs (any such path is served here).
 */
function metadataUrl(resource: URL): string {
  return `${resource.origin}${WELL_KNOWN}${resource.pathname === '/' ? '' : resource.pathname}`;
}

function header(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/**
 * How much the request's `Accept` wants `type` (RFC 9110 12.5.1): the q of the most specific
 * range naming it (`type`, then `major/*`, then `*\/*`), 0 when none does or that q is 0 ("not
 * acceptable"). No Accept: JSON only. A range with a q that is not a number is left out.
 */
function accepts(req: IncomingMessage, type: string): number {
  const a = header(req, 'accept');
  if (a === undefined) return type === 'application/json' ? 1 : 0;
  const ranges = [type, `${type.split('/')[0]}/*`, '*/*'];
  let best = 0;
  let specificity = ranges.length;
  for (const part of a.split(',')) {
    const [range, ...params] = part.split(';');
    const at = ranges.indexOf(range.trim().toLowerCase());
    if (at < 0 || at > specificity) continue;
    const qParam = params.map((p) => p.trim().toLowerCase()).find((p) => p.startsWith('q='));
    const q = qParam === undefined ? 1 : Number(qParam.slice(2));
    if (!Number.isFinite(q)) continue;
    // The most specific range decides; among ranges as specific, the highest q.
    best = at < specificity ? q : Math.max(best, q);
    specificity = at;
  }
  return Math.min(Math.max(best, 0), 1);
}

function send(res: ServerResponse, status: number, body: JsonObject | null, headers: Record<string, string> = {}): void {
  if (res.headersSent) return void res.end();
  if (body === null) return void res.writeHead(status, headers).end();
  res.writeHead(status, { 'Content-Type': 'application/json', ...headers }).end(JSON.stringify(body));
}

/** The body's Content-Length, when it declares one. */
function declaredLength(req: IncomingMessage): number | undefined {
  const declared = Number(header(req, 'content-length') ?? NaN);
  return Number.isSafeInteger(declared) && declared >= 0 ? declared : undefined;
}

/** The start of a body: at least `bytes` of it (one chunk past), or all of it when it `ended` within them. */
interface Head {
  chunks: Buffer[];
  bytes: number;
  ended: boolean;
}

/** Reads a body until it ends or passes `limit` bytes; the rest stays unread (paused). */
function readHead(req: IncomingMessage, limit: number): Promise<Head> {
  return new Promise((resolve, reject) => {
    const head: Head = { chunks: [], bytes: 0, ended: false };
    const stop = (): void => {
      req.off('data', onData).off('end', onEnd).off('error', reject);
      resolve(head);
    };
    const onData = (c: Buffer): void => {
      head.chunks.push(c);
      head.bytes += c.length;
      if (head.bytes > limit) (req.pause(), stop());
    };
    const onEnd = (): void => ((head.ended = true), stop());
    req.on('data', onData).once('end', onEnd).once('error', reject);
  });
}

/** The body (after its `head`, when read), or null once it passes `max` bytes (the rest is not read). */
async function readBody(req: IncomingMessage, max: number, head?: Head): Promise<Uint8Array | null> {
  const declared = declaredLength(req);
  if (declared !== undefined && declared > max) return null;
  if (!head) return readBodyUpTo(req, max, 'pause');
  if (head.bytes > max) return null;
  if (head.ended) return Buffer.concat(head.chunks);
  const rest = readBodyUpTo(req, max - head.bytes, 'pause');
  req.resume(); // paused by readHead: a new 'data' listener does not restart it
  const tail = await rest;
  return tail === null ? null : Buffer.concat([...head.chunks, tail]);
}

/** The request a notifications/cancelled names. */
function cancelledId(params: unknown): RpcId | undefined {
  if (!params || typeof params !== 'object' || Array.isArray(params)) return undefined;
  const id = (params as Record<string, unknown>).requestId;
  return typeof id === 'string' || typeof id === 'number' ? id : undefined;
}

function progressToken(params: unknown): string | undefined {
  if (!params || typeof params !== 'object' || Array.isArray(params)) return undefined;
  const meta = (params as Record<string, unknown>)._meta;
  if (!meta || typeof meta !== 'object') return undefined;
  const t = (meta as Record<string, unknown>).progressToken;
  return typeof t === 'string' || typeof t === 'number' ? JSON.stringify(t) : undefined;
}
