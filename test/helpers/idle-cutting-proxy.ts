// A TCP proxy that cuts a connection once its server side has sent nothing for `idleMs`, as a
// load balancer or reverse proxy does (nginx's proxy_read_timeout, an ALB's idle timeout).
import net from 'node:net';

export interface IdleCuttingProxy {
  url: string;
  /** How many connections were cut for their silence. */
  readonly cuts: number;
  close(): Promise<void>;
}

export async function idleCuttingProxy(target: string, idleMs: number): Promise<IdleCuttingProxy> {
  const to = new URL(target);
  let cuts = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(to.port), to.hostname);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s)).on('error', () => undefined);
    }
    let timer: NodeJS.Timeout | undefined;
    const quiet = (): void => {
      clearTimeout(timer);
      timer = setTimeout(() => {
        cuts++;
        client.destroy();
        upstream.destroy();
      }, idleMs);
    };
    client.on('close', () => (clearTimeout(timer), upstream.destroy()));
    upstream.on('close', () => (clearTimeout(timer), client.destroy()));
    upstream.on('data', quiet);
    client.once('data', quiet); // the clock starts with the first request
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `http://127.0.0.1:${port}${to.pathname}`,
    get cuts() {
      return cuts;
    },
    close: () => {
      for (const s of sockets) s.destroy();
      return new Promise((r) => server.close(() => r()));
    },
  };
}
