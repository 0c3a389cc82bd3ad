// A TCP proxy in front of a PostgreSQL that can stop passing bytes, as a stopped server (or a
// network that drops everything) looks to a client: connections are accepted and nothing comes
// back. It can freeze at once, or as a message with a given text passes from the client (that
// message held too), so a test stops the database exactly under one statement; or right after
// such a message reached the server, so that the server does it and its answer is lost. Thawed,
// what was held goes on in order.
import net from 'node:net';

export interface FreezingProxy {
  /** The database URL through the proxy. */
  url: string;
  freeze(): void;
  /** Freeze when a client sends bytes containing `text` (held too; with `passing`, sent first). */
  freezeOn(text: string, o?: { passing?: boolean }): void;
  thaw(): void;
  /** How many times a freeze took hold. */
  readonly frozenTimes: number;
  close(): Promise<void>;
}

interface Pipe {
  client: net.Socket;
  server: net.Socket;
  toServer: Buffer[];
  toClient: Buffer[];
  clientEnded: boolean;
  serverClosed: boolean;
}

export async function freezingProxy(target: string): Promise<FreezingProxy> {
  const t = new URL(target);
  const pipes = new Set<Pipe>();
  let frozen = false;
  let trigger: string | null = null;
  let passing = false;
  let frozenTimes = 0;
  const flush = (p: Pipe) => {
    for (const b of p.toServer.splice(0)) p.server.write(b);
    for (const b of p.toClient.splice(0)) if (!p.client.destroyed) p.client.write(b);
    if (p.clientEnded) p.server.end();
    if (p.serverClosed) {
      pipes.delete(p);
      p.client.destroy();
    }
  };
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(t.port), t.hostname);
    const p: Pipe = { client, server: upstream, toServer: [], toClient: [], clientEnded: false, serverClosed: false };
    pipes.add(p);
    client.on('data', (b) => {
      if (!frozen && trigger !== null && b.includes(trigger)) {
        frozen = true;
        frozenTimes++;
        trigger = null;
        if (passing) return void upstream.write(b);
      }
      if (frozen) p.toServer.push(b);
      else upstream.write(b);
    });
    upstream.on('data', (b) => {
      if (frozen) p.toClient.push(b);
      else if (!client.destroyed) client.write(b);
    });
    // A client that goes away while frozen: the server learns it once thawed, after what it sent.
    const clientGone = () => {
      p.clientEnded = true;
      if (!frozen) upstream.end();
    };
    client.on('end', clientGone);
    client.on('close', clientGone);
    client.on('error', () => undefined);
    // The server ending the session (e.g. idle_in_transaction_session_timeout) reaches the
    // client only once thawed: a stopped server closes nothing.
    const serverGone = () => {
      p.serverClosed = true;
      if (!frozen) {
        pipes.delete(p);
        client.destroy();
      }
    };
    upstream.on('error', serverGone);
    upstream.on('close', serverGone);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as net.AddressInfo).port;
  const u = new URL(target);
  u.hostname = '127.0.0.1';
  u.port = String(port);
  return {
    url: u.toString(),
    freeze() {
      if (!frozen) frozenTimes++;
      frozen = true;
    },
    freezeOn(text: string, o: { passing?: boolean } = {}) {
      trigger = text;
      passing = o.passing === true;
    },
    thaw() {
      frozen = false;
      trigger = null;
      for (const p of pipes) flush(p);
    },
    get frozenTimes() {
      return frozenTimes;
    },
    async close() {
      frozen = false;
      for (const p of pipes) {
        p.client.destroy();
        p.server.destroy();
      }
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
