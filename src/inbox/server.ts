// The approval inbox's HTTP server (inbox.md): the page, its API and its event stream. The
// page is served from the package (page/); nothing loads from outside (the CSP says 'self').
// It reads requests through the store's ports and decides them in decisions.ts; the approver
// key stays in this process. Requests carry argument values: they go to the logged-in page and
// nowhere else (no request log, errors named without values, every JSON answer no-store).
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { boundedServer } from '../util/http-server.js';
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { createHash } from 'node:crypto';
import { parseStrict } from '../wire/strict-parse.js';
import type { JsonValue } from '../core/json.js';
import { StoreError, type ApprovalRequest, type ListedRequest } from '../store/ports.js';
import { SignerUnavailable } from '../core/signer.js';
import { readBodyUpTo } from '../util/request-body.js';
import { Sessions } from './auth.js';
import { hostnameOf, loopbackNames, requestHost } from '../doors/http-auth.js';
import { decideRequest, type DecisionParts } from './decisions.js';
import { INDEX_HTML, LOGIN_HTML } from './page/html.js';
import { MAX_OPEN_REQUESTS } from '../approvals/requests.js';
import { APP_CSS } from './page/css.js';

/** As many as the gate keeps (ADR 058): every open request is listed. */
const MAX_LISTED = MAX_OPEN_REQUESTS;
/**
 * A call longer than this is listed without its arguments (the page fetches them when it is
 * opened). A call may be megabytes, and the list holds every open request: whole, 200 calls of
 * 3.5 MB made one listing take over 500 MB.
 */
export const LIST_CALL_BYTES = 64 * 1024;
const MAX_FORM_BYTES = 4096;
/**
 * Connections at once by default: a person's browsers hold a few each (an event stream, a fetch
 * or two); a flood of idle sockets must not take the descriptors the store needs (ADR 085).
 */
export const DEFAULT_INBOX_CONNECTIONS = 256;
const ID = /^[A-Za-z0-9_-]{1,64}$/;

const HEADERS: Record<string, string> = {
  'Content-Security-Policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'X-Content-Type-Options': 'nosniff',
  'X-Frame-Options': 'DENY',
  // Not no-referrer: under it a form's POST carries `Origin: null`, which the origin check must refuse.
  'Referrer-Policy': 'same-origin',
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Resource-Policy': 'same-origin',
  'Cache-Control': 'no-store',
};

export interface InboxServerOptions extends DecisionParts {
  sessions: Sessions;
  host: string;
  port: number;
  /** Bound to a loopback address: requests must name it in Host (no DNS rebinding). */
  loopback: boolean;
  /** Serve HTTPS: the page's origin is https only, its cookie Secure, browsers told to keep to it (HSTS). */
  tls?: { cert: Buffer; key: Buffer };
  /** Connections open at once; one beyond is closed as it comes (ADR 085, as the HTTP door). */
  maxConnections?: number;
  /** How often the store is read for new and expired requests (ms). */
  pollMs?: number;
  say: (message: string) => void;
}

/**
 * What the page shows of one request: the call, its context and the rule requiring approval.
 * Listed, a long call's arguments are null and `call_bytes` says how long it is.
 */
export function requestView(r: ApprovalRequest | ListedRequest) {
  const call = r.call === null ? null : (parseStrict(r.call) as { tool: string; arguments: JsonValue });
  return {
    id: r.id,
    tool: r.tool,
    arguments: call === null ? null : call.arguments,
    call_bytes: 'call_bytes' in r ? r.call_bytes : Buffer.byteLength(r.call),
    task: r.task,
    label: r.label,
    fingerprint: r.fingerprint,
    entry: r.entry,
    gate: r.gate,
    rule: parseStrict(r.rule),
    created_at: r.created_at,
    expires_at: r.expires_at,
  };
}

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export class InboxServer {
  private server: Server | null = null;
  /** Open event streams, by the session each was opened in: a stream lasts no longer than its session. */
  private readonly streams = new Map<ServerResponse, string>();
  private version = '';
  private timer: NodeJS.Timeout | null = null;
  private heartbeat: NodeJS.Timeout | null = null;
  private origin = '';
  private hosts = new Set<string>();
  private readonly appJs: string;

  constructor(private readonly o: InboxServerOptions) {
    this.appJs = readFileSync(new URL('./page/app.js', import.meta.url), 'utf8');
  }

  async start(): Promise<string> {
    // Decisions a crash cut between the store's two files are completed before anyone sees the list.
    const completed = (await this.o.journal?.recover(this.o.store, this.o.ledger)) ?? 0;
    if (completed > 0) this.o.say(`completed ${completed} decision(s) a stop had cut short`);
    const handler = (req: IncomingMessage, res: ServerResponse) => void this.handle(req, res).catch((e) => this.fail(res, e));
    const tls = this.o.tls;
    const server = boundedServer(handler, tls, this.o.maxConnections ?? DEFAULT_INBOX_CONNECTIONS);
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.o.port, this.o.host, () => resolve());
    });
    const { port } = server.address() as AddressInfo;
    const host = this.o.host.includes(':') ? `[${this.o.host}]` : this.o.host;
    this.origin = `${this.o.tls ? 'https' : 'http'}://${host}:${port}`;
    // Any port: one forwarded to this one (ssh -L) is named in Host and Origin as the browser sees it.
    this.hosts = loopbackNames(this.o.host);
    await this.poll();
    this.timer = setInterval(() => void this.poll(), this.o.pollMs ?? 1000);
    this.heartbeat = setInterval(() => this.endStreams((id) => !this.o.sessions.isOpen(id), ': keep-alive\n\n'), 15_000);
    return this.origin;
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    if (this.heartbeat) clearInterval(this.heartbeat);
    for (const s of this.streams.keys()) s.end();
    this.streams.clear();
    const server = this.server;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /**
   * Decisions a stop cut short (another inbox's on this home, or this one's whose completion
   * failed) are completed; expired requests go; a change in what is pending is pushed to every open page.
   */
  private async poll(): Promise<void> {
    try {
      const completed = (await this.o.journal?.recover(this.o.store, this.o.ledger)) ?? 0;
      if (completed > 0) this.o.say(`completed ${completed} decision(s) a stop had cut short`);
    } catch (e) {
      this.tell(e);
    }
    const now = new Date((this.o.clock ?? Date.now)()).toISOString();
    let ids: string;
    try {
      ids = await this.o.store.transact(() => {
        this.o.store.approvalRequests.prune(now);
        return this.o.store.approvalRequests
          .listed(now, MAX_LISTED, 0)
          .map((r) => `${r.id}@${r.created_at}`)
          .join(',');
      });
    } catch (e) {
      this.tell(e);
      return;
    }
    const version = createHash('sha256').update(ids).digest('hex').slice(0, 16);
    if (version === this.version) return;
    this.version = version;
    this.endStreams((id) => !this.o.sessions.isOpen(id), `event: requests\ndata: ${JSON.stringify({ version })}\n\n`);
  }

  /** Ends the streams whose session `ended` says is over; writes `text` to the others. */
  private endStreams(ended: (session: string) => boolean, text?: string): void {
    for (const [s, id] of this.streams) {
      if (ended(id)) {
        s.end();
        this.streams.delete(s);
      } else if (text !== undefined) s.write(text);
    }
  }

  private told = new Set<string>();
  private tell(e: unknown): void {
    // Store errors are worded without values (store/ports.ts), a key that cannot sign by its
    // place and the token's CKR code (never a PIN); anything else by its type only.
    const m = e instanceof StoreError || e instanceof SignerUnavailable ? e.message : `internal error (${(e as Error)?.name ?? 'unknown'})`;
    if (this.told.has(m)) return;
    this.told.add(m);
    this.o.say(m);
  }

  private fail(res: ServerResponse, e: unknown): void {
    if (res.headersSent) return void res.end();
    if (e instanceof HttpError) return this.json(res, e.status, { error: e.message });
    this.tell(e);
    // Fail closed: the decision's transaction rolled back, the request still waits.
    if (e instanceof SignerUnavailable) return this.json(res, 503, { error: 'a signing key is unavailable (its token?): nothing was decided; see the server for why' });
    this.json(res, 503, { error: 'the inbox could not read or write its store; see the server for why' });
  }

  private send(res: ServerResponse, status: number, type: string, body: string, extra: Record<string, string> = {}): void {
    res.writeHead(status, { ...this.headers(), 'Content-Type': type, 'Content-Length': Buffer.byteLength(body), ...extra });
    res.end(body);
  }

  private headers(): Record<string, string> {
    return this.o.tls ? { ...HEADERS, 'Strict-Transport-Security': 'max-age=31536000' } : HEADERS;
  }

  private json(res: ServerResponse, status: number, v: unknown): void {
    this.send(res, status, 'application/json; charset=utf-8', JSON.stringify(v));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    // A loopback inbox answers only to its own name: a page of another site that rebinds its
    // DNS name to 127.0.0.1 sends its own Host and gets nothing.
    if (this.o.loopback && !this.hosts.has(hostnameOf(requestHost(req)) ?? '')) throw new HttpError(421, 'unknown host');
    const url = new URL(req.url ?? '/', this.origin);
    const path = url.pathname;
    const method = req.method ?? 'GET';
    if (method === 'POST') this.sameOrigin(req);

    if (method === 'GET' && path === '/app.js') return this.send(res, 200, 'text/javascript; charset=utf-8', this.appJs);
    if (method === 'GET' && path === '/app.css') return this.send(res, 200, 'text/css; charset=utf-8', APP_CSS);
    if (method === 'GET' && path === '/favicon.ico') return void (res.writeHead(204, this.headers()), res.end());
    if (path === '/login') {
      if (method === 'GET') return this.send(res, 200, 'text/html; charset=utf-8', LOGIN_HTML);
      if (method === 'POST') return this.login(req, res);
    }
    const session = this.o.sessions.fromCookie(req.headers.cookie);
    if (method === 'GET' && path === '/') {
      if (!session) return this.send(res, 303, 'text/plain; charset=utf-8', 'log in\n', { Location: '/login?why=signin' });
      return this.send(res, 200, 'text/html; charset=utf-8', INDEX_HTML);
    }
    if (!session) throw new HttpError(401, 'log in first');
    // Every route past here wants the API token besides the cookie, reads too: any server on
    // another port of this host gets the cookie from the browser, never the token (ADR 069).
    this.checkCsrf(session, req);
    if (method === 'POST' && path === '/logout') {
      this.o.sessions.close(session.id);
      this.endStreams((id) => id === session.id);
      return this.send(res, 204, 'text/plain', '', { 'Set-Cookie': Sessions.clearCookie(!!this.o.tls) });
    }
    if (method === 'GET' && path === '/api/session')
      return this.json(res, 200, {
        approver: { key_id: this.o.approver.keyId, name: this.o.approver.name },
        ttl_ms: this.o.ttlMs,
      });
    if (method === 'GET' && path === '/api/requests') {
      const now = new Date((this.o.clock ?? Date.now)()).toISOString();
      const list = await this.o.store.transact(() => this.o.store.approvalRequests.listed(now, MAX_LISTED, LIST_CALL_BYTES));
      return this.json(res, 200, { requests: list.map(requestView) });
    }
    if (method === 'GET' && path === '/api/events') return this.events(res, session.id);
    const m = /^\/api\/requests\/([^/]+)(?:\/(approve|deny))?$/.exec(path);
    if (m && ID.test(m[1])) {
      if (method === 'GET' && !m[2]) {
        const now = new Date((this.o.clock ?? Date.now)()).toISOString();
        const r = await this.o.store.transact(() => this.o.store.approvalRequests.get(m[1]));
        if (!r || r.expires_at <= now) throw new HttpError(404, 'no such request (decided or expired)');
        return this.json(res, 200, requestView(r));
      }
      if (method === 'POST' && m[2]) {
        const d = await decideRequest(this.o, m[1], m[2] as 'approve' | 'deny');
        if (!d.ok && d.why === 'approved') throw new HttpError(410, `this call is already approved (receipt ${d.receipt}, valid until ${d.expires_at}): this request was a copy of it, closed, nothing decided`);
        if (!d.ok) throw new HttpError(410, 'this request was already decided or has expired');
        void this.poll();
        return this.json(res, 200, d);
      }
    }
    throw new HttpError(404, 'not found');
  }

  /**
   * A change comes from this inbox's own page: never from another site (Origin, Fetch Metadata).
   * Its origin is the host the request names (checked against the listen address on loopback;
   * beyond it the name a person uses, also through a TLS-terminating proxy); served over TLS,
   * only its https origin: no page served in clear can be its own.
   */
  private sameOrigin(req: IncomingMessage): void {
    const origin = req.headers.origin;
    const host = req.headers.host ?? '';
    const own = origin === `https://${host}` || (!this.o.tls && origin === `http://${host}`);
    if (origin !== undefined && !own) throw new HttpError(403, 'cross-origin request refused');
    const site = req.headers['sec-fetch-site'];
    if (site !== undefined && site !== 'same-origin' && site !== 'none') throw new HttpError(403, 'cross-site request refused');
  }

  private checkCsrf(session: { csrf: string }, req: IncomingMessage): void {
    const presented = req.headers['x-csrf-token'];
    if (!this.o.sessions.csrfMatches(session, typeof presented === 'string' ? presented : undefined)) throw new HttpError(403, 'missing or wrong API token (X-CSRF-Token): log in again in this browser');
  }

  private async login(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const form = await readBodyUpTo(req, MAX_FORM_BYTES, 'resume');
    if (form === null) {
      // Answered, and the rest drained, not cut: a connection closed mid-body is only a network
      // error to the page (the login page said "Failed to fetch"). Node's bound on a request's time
      // ends a body that never does.
      throw new HttpError(413, `the login form is over ${MAX_FORM_BYTES} bytes: the login token is one line of 16 to 512 characters (the file given to --auth-token-file, or the one in the link the inbox printed)`);
    }
    const body = form.toString('utf8');
    const token = new URLSearchParams(body).get('token') ?? '';
    if (!this.o.sessions.tokenMatches(token)) {
      await new Promise((r) => setTimeout(r, 250)); // slows guessing; the token is long anyway
      return this.json(res, 401, { error: "that is not the inbox's login token" });
    }
    // A login replaces the session this browser held: one cookie, one API token, no stale session.
    const held = this.o.sessions.fromCookie(req.headers.cookie);
    if (held) {
      this.o.sessions.close(held.id);
      this.endStreams((id) => id === held.id);
    }
    const s = this.o.sessions.open();
    // The API token goes in the body, to the login page's script, which keeps it per origin.
    this.send(res, 200, 'application/json; charset=utf-8', JSON.stringify({ csrf: s.csrf }), { 'Set-Cookie': Sessions.setCookie(s.id, !!this.o.tls) });
  }

  private events(res: ServerResponse, session: string): void {
    res.writeHead(200, { ...this.headers(), 'Content-Type': 'text/event-stream; charset=utf-8', Connection: 'keep-alive' });
    res.write(`retry: 2000\nevent: requests\ndata: ${JSON.stringify({ version: this.version })}\n\n`);
    this.streams.set(res, session);
    res.on('close', () => this.streams.delete(res));
  }
}
