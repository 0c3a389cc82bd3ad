// An HTTP server of the tests (a fake log, TSA, model API, upstream) on a free loopback port.
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';

/** Listens on 127.0.0.1:0; `close` also ends kept-alive connections, so it does not wait on a client. */
export async function listenLocal(server: Server): Promise<{ url: string; close(): Promise<void> }> {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
