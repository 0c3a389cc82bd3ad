// A raw Streamable HTTP MCP server that misbehaves on purpose, one way per tool, to prove what
// the gate's HTTP upstream transport lets through: wrong content types, broken and cut event
// streams, 5xx, bodies over the bound, forged and unreadable answers, a forgotten session.
// It records the headers of every request it receives (to show what the gate sends upstream).
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { listenLocal } from './local-http.js';

export const CANARY = 'CANARY-http-upstream-41d7';
export const SESSION = 'raw-session-0001';
export const TOOLS = [
  'ok', 'ok_sse', 'wrong_type', 'sse_bad_field', 'sse_cut', 'sse_other_event', 'status_500', 'huge_declared', 'huge_chunked', 'huge_event',
  'forged_id', 'dup_key', 'no_body', 'forget_session', 'hang', 'held',
  // An event stream with ids that the server cuts before the reply; then, on the GET that resumes
  // it: the reply after a replayed reply to another id (resume_ok), 405 (resume_refused), an empty
  // stream every time (resume_loop), a malformed stream (resume_bad), a stream held open with
  // nothing on it (resume_idle: `idle.closed` counts those the client closed).
  'resume_ok', 'resume_refused', 'resume_loop', 'resume_bad', 'resume_idle',
];
const BIG = 64 * 1024 * 1024 + 1024;

export interface RawUpstream {
  url: string;
  server: Server;
  /** Headers of every request, in order (lower-case names). */
  seen: { method: string; headers: IncomingMessage['headers'] }[];
  /** Calls of `held` received and not yet answered: answer the oldest with release(). */
  held: (() => void)[];
  /** Resumed streams of resume_idle that the client closed. */
  idle: { closed: number };
  /** Resolves once `n` calls of `held` are waiting. */
  heldCount(n: number): Promise<void>;
  close(): Promise<void>;
}

const result = (id: unknown, text: string) => JSON.stringify({ jsonrpc: '2.0', id, result: { content: [{ type: 'text', text }] } });

export async function startRawUpstream(): Promise<RawUpstream> {
  const seen: RawUpstream['seen'] = [];
  const held: (() => void)[] = [];
  let waiters: (() => void)[] = [];
  let forgotten = false;
  const idle = { closed: 0 };
  /** What a GET with Last-Event-ID gets, by that id. */
  const resumes = new Map<string, (res: ServerResponse) => void>();
  const server = createServer((req, res) => {
    seen.push({ method: req.method ?? '', headers: req.headers });
    const last = req.headers['last-event-id'];
    if (req.method === 'GET' && typeof last === 'string' && resumes.has(last)) return resumes.get(last)!(res);
    if (req.method === 'GET') return void res.writeHead(405).end();
    if (req.method === 'DELETE') return void res.writeHead(200).end();
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => answer(JSON.parse(Buffer.concat(chunks).toString('utf8')), req, res));
  });
  const answer = (m: { id?: unknown; method: string; params?: any }, req: IncomingMessage, res: ServerResponse) => {
    if (m.method === 'initialize') {
      res.writeHead(200, { 'Content-Type': 'application/json', 'Mcp-Session-Id': SESSION });
      return void res.end(JSON.stringify({ jsonrpc: '2.0', id: m.id, result: { protocolVersion: m.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'raw-http', version: '1' } } }));
    }
    if (forgotten || req.headers['mcp-session-id'] !== SESSION) return void res.writeHead(404).end();
    if (m.id === undefined) return void res.writeHead(202).end();
    if (m.method === 'tools/list') {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      return void res.end(JSON.stringify({ jsonrpc: '2.0', id: m.id, result: { tools: TOOLS.map((name) => ({ name, inputSchema: { type: 'object' } })) } }));
    }
    if (m.method !== 'tools/call') {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      return void res.end(JSON.stringify({ jsonrpc: '2.0', id: m.id, result: {} }));
    }
    const id = m.id;
    const text = `${m.params.name} ${CANARY}`;
    const sse = () => res.writeHead(200, { 'Content-Type': 'text/event-stream' });
    switch (m.params.name) {
      case 'ok':
        res.writeHead(200, { 'Content-Type': 'application/json; charset=utf-8' });
        return void res.end(result(id, text));
      case 'ok_sse':
        sse();
        res.write(': keep-alive\n\nid: 7\nretry: 1000\n\n');
        return void res.end(`event: message\r\ndata: ${result(id, text)}\r\n\r\n`);
      case 'wrong_type':
        res.writeHead(200, { 'Content-Type': 'text/plain' });
        return void res.end(result(id, text));
      case 'sse_bad_field':
        sse();
        return void res.end(`dat: ${result(id, text)}\n\n`);
      case 'sse_cut':
        sse();
        res.write(`data: ${result(id, text).slice(0, 20)}`);
        return void setTimeout(() => res.socket?.destroy(), 50);
      case 'sse_other_event':
        sse();
        return void res.end(`event: surprise\ndata: ${result(id, text)}\n\n`);
      case 'status_500':
        res.writeHead(500, { 'Content-Type': 'application/json' });
        return void res.end(result(id, text));
      case 'huge_declared':
        res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': String(BIG) });
        return void res.write('{"jsonrpc":"2.0"'); // and never the rest
      case 'huge_chunked':
      case 'huge_event': {
        if (m.params.name === 'huge_event') sse();
        else res.writeHead(200, { 'Content-Type': 'application/json' });
        const head = m.params.name === 'huge_event' ? `data: {"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":{"pad":"` : `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":{"pad":"`;
        res.write(head);
        const block = Buffer.alloc(1024 * 1024, 0x61);
        let sent = 0;
        const more = () => {
          while (sent < BIG) {
            sent += block.length;
            if (!res.write(block)) return void res.once('drain', more);
          }
          res.end('"}}\n\n');
        };
        res.on('error', () => undefined);
        return more();
      }
      case 'forged_id':
        sse();
        return void res.end(`data: ${result(typeof id === 'number' ? id + 1000 : 'x', text)}\n\n`);
      case 'dup_key':
        res.writeHead(200, { 'Content-Type': 'application/json' });
        return void res.end(`{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":{"content":[]},"result":{"content":[{"type":"text","text":"${CANARY}"}]}}`);
      case 'no_body':
        return void res.writeHead(202).end();
      case 'forget_session':
        forgotten = true;
        return void res.writeHead(404).end();
      case 'resume_ok':
      case 'resume_refused':
      case 'resume_loop':
      case 'resume_bad':
      case 'resume_idle': {
        const name = m.params.name as string;
        const eid = `${name}-${String(id)}`;
        sse();
        // A priming event (an id, no data), a progress-like notification, then the cut.
        res.write(`id: ${eid}-0\ndata:\n\nid: ${eid}-1\ndata: {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"working"}}\n\nid: ${eid}-2\ndata: {"jsonrpc":"2.0",`);
        setTimeout(() => res.socket?.destroy(), 50);
        resumes.set(`${eid}-1`, (g) => {
          if (name === 'resume_refused') return void g.writeHead(405).end();
          g.writeHead(200, { 'Content-Type': 'text/event-stream' });
          if (name === 'resume_loop') return void g.end(': nothing new\n\n');
          if (name === 'resume_bad') return void g.end(`dat: ${result(id, text)}\n\n`);
          if (name === 'resume_idle') return void (g.write(': held\n\n'), g.on('close', () => idle.closed++));
          // A replayed answer to another id (the call before this one, which may still wait), then this call's.
          const other = typeof id === 'number' ? id - 1 : `${String(id)}x`;
          g.end(`retry: 10\nid: ${eid}-3\ndata: ${result(other, `stale ${CANARY}`)}\n\nid: ${eid}-4\ndata: ${result(id, text)}\n\n`);
        });
        return;
      }
      case 'hang':
        return; // never answers
      case 'held':
        held.push(() => {
          res.writeHead(200, { 'Content-Type': 'application/json' });
          res.end(result(id, text));
        });
        for (const w of waiters) w();
        return;
    }
  };
  const local = await listenLocal(server);
  return {
    url: `${local.url}/mcp`,
    server,
    seen,
    held,
    idle,
    heldCount: (n) =>
      new Promise((resolve) => {
        const check = () => {
          if (held.length < n) return;
          waiters = waiters.filter((w) => w !== check);
          resolve();
        };
        waiters.push(check);
        check();
      }),
    close: local.close,
  };
}
