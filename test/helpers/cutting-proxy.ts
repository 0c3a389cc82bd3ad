// An HTTP proxy in front of a Streamable HTTP server that cuts a POST's event stream on purpose:
// every request is passed through as it is, except that in the answer to a POST whose body
// `cut` picks, the first event holding a JSON-RPC reply is not forwarded and both connections
// are destroyed instead (the network failing just before the reply). Records each request, and
// counts the POST event streams still open (a server holding one for a request given up on).
import { createServer, request, type IncomingMessage, type Server } from 'node:http';

export interface CuttingProxy {
  url: string;
  server: Server;
  seen: { method: string; headers: IncomingMessage['headers']; body?: string }[];
  /** How many streams were cut. */
  cuts: number;
  /** POST event streams open now. */
  open: number;
  close(): Promise<void>;
}

export async function startCuttingProxy(target: string, cut: (body: string) => boolean): Promise<CuttingProxy> {
  const to = new URL(target);
  const p: CuttingProxy = { url: '', server: undefined as unknown as Server, seen: [], cuts: 0, open: 0, close: async () => undefined };
  const server = createServer((req, res) => {
    const seen: CuttingProxy['seen'][number] = { method: req.method ?? '', headers: req.headers };
    p.seen.push(seen);
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      if (req.method === 'POST') seen.body = body.toString('utf8');
      const headers = { ...req.headers, host: to.host };
      const up = request(to, { method: req.method, headers }, (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        if (req.method === 'POST' && String(answer.headers['content-type']).startsWith('text/event-stream')) {
          p.open++;
          res.on('close', () => p.open--);
        }
        const cutting = req.method === 'POST' && cut(body.toString('utf8')) && String(answer.headers['content-type']).startsWith('text/event-stream');
        if (!cutting) return void answer.pipe(res);
        let held = '';
        let cutNow = false;
        answer.on('data', (c: Buffer) => {
          if (cutNow) return;
          held += c.toString('utf8');
          let end;
          while ((end = held.indexOf('\n\n')) >= 0) {
            const event = held.slice(0, end + 2);
            held = held.slice(end + 2);
            if (/^data: .*"(result|error)":/m.test(event)) {
              // What was forwarded reaches the client first; then the connection breaks.
              p.cuts++;
              cutNow = true;
              answer.destroy();
              setTimeout(() => res.socket?.destroy(), 50);
              return;
            }
            res.write(event);
          }
        });
        answer.on('end', () => cutNow || res.end());
      });
      up.on('error', () => res.socket?.destroy());
      up.end(body);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  p.url = `http://127.0.0.1:${(server.address() as { port: number }).port}${to.pathname}`;
  p.server = server;
  p.close = () =>
    new Promise((r) => {
      server.closeAllConnections();
      server.close(() => r());
    });
  return p;
}
