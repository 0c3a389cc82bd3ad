// The HTTP door's side of one MCP session, as a Transport for the relay. HTTP has no single
// stream: each POST of a request waits for the answer with its id (as JSON, or as an SSE stream
// that also carries the notifications of that request), and the server's own messages go on the
// GET stream. This file only routes frames; the relay parses, decides and matches them.
import type { ServerResponse } from 'node:http';
import type { RpcId } from '../wire/jsonrpc.js';
import type { InboundFrame, Transport, TransportClosed } from './transport.js';
import { log } from '../telemetry/log.js';

/** An open POST waiting for the answer to its request. */
interface Waiting {
  id: RpcId;
  res: ServerResponse;
  sse: boolean;
  /** The request's progress token: its progress notifications go on its own stream. */
  progressToken?: string;
}

/**
 * How often an idle event stream (a GET's, or a POST's waiting for its answer) carries an SSE
 * comment: bytes on the wire let TCP find a client gone without a FIN, and keep proxies that cut
 * idle connections from cutting a long call.
 */
export const HEARTBEAT_MS = 15_000;

/**
 * GET streams one session keeps open (MCP lets a client hold several; each message goes on one,
 * the newest). One more cuts the oldest: a client gone without a FIN leaves its stream open until
 * TCP gives up, and each such stream may hold HELD_BYTES.
 */
export const GET_STREAMS = 4;

/** Server messages held for a GET stream not yet open; beyond this the oldest are dropped. */
const BACKLOG = 256;
/**
 * Bytes of server messages held for a host that does not read them: the backlog (beyond this the
 * oldest are dropped, the newest always kept), or what waits unread on an open stream (beyond
 * this a new message is dropped). One message may be 64 MiB: 256 of them, or a stream the host
 * never reads, held gigabytes in the gate for one session.
 */
const HELD_BYTES = 16 * 1024 * 1024;

/**
 * Bodies of one session read at once while its relay takes frames. Past --max-in-flight the relay
 * pauses, and the bodies being read then wait whole inside the gate: this bounds them. The other
 * POSTs wait unread (their bytes stay in the socket, TCP slows the host).
 */
const READING = 4;
/** POSTs of one session waiting, unread, for the relay: past this a POST is answered 503. */
export const WAITING_UNREAD = 1024;
/**
 * A POST declaring at most this many bytes is read at once, even while the relay is paused: it may
 * be a cancel or the host's answer to a request the server sent in the middle of a call, which
 * start no call and must not wait behind the calls they end. A request among them waits read;
 * what that holds is bounded by the door's connections (--max-connections of these at most).
 */
export const CONTROL_BYTES = 64 * 1024;

const idKey = (id: unknown) => JSON.stringify(id);

export class HttpSessionTransport implements Transport {
  onframe?: (frame: InboundFrame) => void;
  onclose?: (info: TransportClosed) => void;
  onerror?: (error: Error) => void;
  private readonly waiting = new Map<string, Waiting>();
  /** The open GET streams, oldest first; messages go on the newest. */
  private streams: ServerResponse[] = [];
  private backlog: string[] = [];
  private backlogBytes = 0;
  private started = false;
  /** Bodies not yet handed to the relay (before start, or while it is paused); a request's with its id. */
  private early: { frame: InboundFrame; key?: string; cancelAfter?: true }[] = [];
  private closed = false;
  private paused = false;
  /** Bodies being read now (admitted), and the POSTs waiting to be admitted, oldest first. */
  private reading = 0;
  private readonly unread: (() => void)[] = [];

  async start(): Promise<void> {
    this.started = true;
    this.flush();
  }

  /** The relay has enough in flight: bodies wait here (their POSTs stay open) until resume(). */
  pause(): void {
    this.paused = true;
  }

  resume(): void {
    this.paused = false;
    this.flush();
  }

  private flush(): void {
    // A paused relay still takes what starts no call (a cancel held behind its request).
    // An ended session delivers nothing more: what waits here never runs (close() tells its POSTs).
    while (this.started && !this.closed && this.early.length > 0 && (!this.paused || this.early[0].key === undefined)) this.onframe?.(this.early.shift()!.frame);
    this.admitNext();
  }

  /**
   * Wait until this session may read one more POST body: its relay takes frames, and fewer than
   * READING are being read or wait read. Resolves false (answer 503) past WAITING_UNREAD
   * waiting or once the session ended; `done()` must follow a true, once the body is read or not.
   * A body that declares at most CONTROL_BYTES (`declared`) never waits.
   */
  admit(req: { once(event: 'close', f: () => void): unknown }, declared?: number): Promise<boolean> {
    if (this.closed) return Promise.resolve(false);
    if ((this.ready() && this.unread.length === 0) || (declared !== undefined && declared <= CONTROL_BYTES)) {
      this.reading++;
      return Promise.resolve(true);
    }
    if (this.unread.length >= WAITING_UNREAD) return Promise.resolve(false);
    return new Promise<boolean>((resolve) => {
      const go = (): void => {
        if (this.closed) return resolve(false);
        this.reading++;
        resolve(true);
      };
      this.unread.push(go);
      // A host that hung up while waiting leaves the queue (its turn would go to nobody).
      req.once('close', () => {
        const i = this.unread.indexOf(go);
        if (i >= 0) {
          this.unread.splice(i, 1);
          resolve(false);
        }
      });
    });
  }

  /** A body admitted by admit() is read (or refused): the next waiting one may be. */
  done(): void {
    this.reading--;
    this.admitNext();
  }

  private ready(): boolean {
    // Not `started`: a notification right after initialize is read (and answered 202) while the upstream starts.
    return !this.paused && this.early.length + this.reading < READING;
  }

  private admitNext(): void {
    while ((this.ready() || this.closed) && this.unread.length > 0) this.unread.shift()!();
  }

  /**
   * One POST body for the relay; a request's answer goes to `res` (JSON or SSE). A message that
   * is not a request starts no call: it reaches the relay even while it is paused, except a
   * cancel (`cancels`) of a request still held here, which follows that request.
   */
  post(bytes: Uint8Array, request: { id: RpcId; progressToken?: string } | null, res: ServerResponse, sse: boolean, cancels?: RpcId): void {
    const frame: InboundFrame = { kind: 'frame', bytes };
    if (!request && this.started && this.paused) {
      const at = cancels === undefined ? -1 : this.early.findIndex((e) => e.key === idKey(cancels));
      // Once per held request: more cancels of it change nothing, and would grow this queue.
      if (at >= 0 && !this.early[at].cancelAfter) {
        this.early[at].cancelAfter = true;
        this.early.splice(at + 1, 0, { frame });
      } else this.onframe?.(frame);
      return;
    }
    if (request) {
      this.waiting.set(idKey(request.id), { id: request.id, res, sse, progressToken: request.progressToken });
      // Its stream opens at the first beat, not before: a call answered sooner keeps its status.
      if (sse) heartbeat(res);
      res.on('close', () => {
        // The host hung up: a later answer has nowhere to go (the relay still records it).
        const w = this.waiting.get(idKey(request.id));
        if (w?.res === res && !res.writableEnded) this.waiting.delete(idKey(request.id));
      });
    }
    this.early.push(request ? { frame, key: idKey(request.id) } : { frame });
    this.flush();
  }

  /**
   * A GET stream: the server's requests and notifications not tied to a request. A new GET of the
   * session is served beside those open (a client that lost its connection without a FIN, a
   * network change or a sleep, reconnects long before TCP gives the old one up) and takes the
   * messages; past GET_STREAMS the oldest is ended, or cut when its client left bytes unread (an
   * ended response keeps them for as long as its socket lives).
   */
  openStream(res: ServerResponse): void {
    this.streams.push(res);
    if (this.streams.length > GET_STREAMS) {
      const old = this.streams.shift()!;
      if (old.writableLength > 0) old.destroy();
      else old.end();
    }
    openEvents(res);
    res.flushHeaders();
    heartbeat(res);
    res.on('close', () => (this.streams = this.streams.filter((s) => s !== res)));
    for (const m of this.backlog.splice(0)) writeEvent(res, m);
    this.backlogBytes = 0;
  }

  /** A POST is waiting for the answer to this id. */
  waits(id: RpcId): boolean {
    return this.waiting.has(idKey(id));
  }

  /** POSTs waiting for admit(), their bodies unread. */
  get waitingUnread(): number {
    return this.unread.length;
  }

  get inFlight(): number {
    return this.waiting.size;
  }

  /** A GET stream is open: its client listens for the server's messages (not idle). */
  get listening(): boolean {
    return this.streams.length > 0;
  }

  send(message: string): void {
    let msg: Record<string, unknown> | null = null;
    try {
      msg = JSON.parse(message) as Record<string, unknown>;
    } catch {
      msg = null; // an upstream line the relay let through unparsed goes to the stream
    }
    if (msg && typeof msg === 'object' && !Array.isArray(msg) && msg.method === undefined && 'id' in msg) {
      const key = idKey(msg.id);
      const w = this.waiting.get(key);
      if (w) {
        this.waiting.delete(key);
        if (w.sse) {
          writeEvent(w.res, message);
          w.res.end();
        } else {
          const status = w.res.headersSent ? w.res.statusCode : 200;
          if (!w.res.headersSent) w.res.writeHead(status, { 'Content-Type': 'application/json' });
          w.res.end(message);
        }
        return;
      }
      // Its POST is gone (the host hung up, or a network cut its stream): a response never goes
      // on the GET stream, and this door keeps no stream to resume (ADR 115). The ledger holds
      // the call's outcome; the log says an answer reached nobody.
      return dropped('post_gone', message, 'host_answer_undelivered');
    }
    this.toStream(message, msg);
  }

  /** A server request or notification: its request's own SSE stream, else the GET stream. */
  private toStream(message: string, msg: Record<string, unknown> | null): void {
    const token = progressTokenOf(msg);
    if (token !== undefined) {
      for (const w of this.waiting.values()) if (w.sse && w.progressToken === token) return toHost(w.res, message);
    }
    const stream = this.streams.at(-1);
    if (stream) return toHost(stream, message);
    for (const w of this.waiting.values()) if (w.sse) return toHost(w.res, message);
    this.backlog.push(message);
    this.backlogBytes += message.length;
    while (this.backlog.length > BACKLOG || (this.backlogBytes > HELD_BYTES && this.backlog.length > 1)) {
      const old = this.backlog.shift()!;
      this.backlogBytes -= old.length;
      dropped('backlog_full', old);
    }
  }

  /** The session ended (DELETE, idle, shutdown): the relay drains and stops the upstream. */
  end(): void {
    if (this.closed) return;
    this.closed = true;
    this.admitNext(); // POSTs waiting unread are answered: the session is gone
    const cb = this.onclose;
    this.onclose = undefined;
    cb?.({ code: null });
  }

  /**
   * Nothing more goes out: open streams are ended. A POST still waiting was never taken by the
   * relay (held behind --max-in-flight when the session ended): it never ran, and is told so.
   */
  async close(): Promise<void> {
    for (const s of this.streams.splice(0)) s.end();
    for (const w of this.waiting.values()) {
      if (w.res.writableEnded) continue;
      const never = JSON.stringify({ jsonrpc: '2.0', id: w.id, error: { code: -32001, message: 'Session not found: it ended before this request was read' } });
      // A stream already open (a heartbeat, a progress) gets the answer as an event: a stream
      // ended without one leaves the client waiting for it until its own timeout.
      if (w.res.headersSent && w.sse) writeEvent(w.res, never);
      if (w.res.headersSent) w.res.end();
      else w.res.writeHead(404, { 'Content-Type': 'application/json' }).end(never);
    }
    this.waiting.clear();
  }
}

/** A server message on a stream, unless the host leaves more than HELD_BYTES unread on it. */
function toHost(res: ServerResponse, message: string): void {
  if (res.writableLength > HELD_BYTES) return dropped('stream_unread', message);
  writeEvent(res, message);
}

function dropped(cause: string, message: string, event = 'host_message_dropped'): void {
  log.warn(event, { cause, bytes: message.length }); // no digest: hashing 64 MiB a drop would cost more than the drop saves
}

/** An SSE comment every HEARTBEAT_MS until `res` ends (its headers sent at the first, if not yet). */
function heartbeat(res: ServerResponse): void {
  const beat = setInterval(() => {
    if (res.writableEnded) return;
    openEvents(res);
    res.write(': keep-alive\n\n');
  }, HEARTBEAT_MS).unref();
  res.on('close', () => clearInterval(beat));
}

function openEvents(res: ServerResponse): void {
  if (!res.headersSent) res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache', Connection: 'keep-alive' });
}

function writeEvent(res: ServerResponse, data: string): void {
  if (res.writableEnded) return;
  openEvents(res);
  res.write(`event: message\ndata: ${data.replace(/[\r\n]/g, '')}\n\n`); // CR/LF can only be JSON whitespace here
}

function progressTokenOf(msg: Record<string, unknown> | null): string | undefined {
  if (!msg || msg.method !== 'notifications/progress') return undefined;
  const p = msg.params as Record<string, unknown> | undefined;
  return p && (typeof p.progressToken === 'string' || typeof p.progressToken === 'number') ? JSON.stringify(p.progressToken) : undefined;
}
