// The HTTP(S) servers of the doors and the inbox, with tighter bounds than Node's on what a client
// may hold before it has asked anything (ADR 068): 10 s to send a request's headers (Node: 60 s;
// the clock starts when the connection opens, so it also closes one that sends nothing) and 10 s
// to finish a TLS handshake (Node: 120 s). A request's whole body keeps Node's 5 minutes: the LLM
// door takes bodies of 16 MiB, which a slow uplink needs minutes for. None of these bounds an
// answer: a long tool call or an SSE stream is not cut.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createTlsServer } from 'node:https';

/** A connection's time to send its first request's headers from when it opened; a later request's, from its first byte. */
export const HEADERS_MS = 10_000;

// connectionsCheckingInterval: how often Node looks for connections past their bound (default 30 s,
// which would triple the 10 s).
const BOUNDS = { headersTimeout: HEADERS_MS, requestTimeout: 300_000, connectionsCheckingInterval: 1_000 };

/**
 * An HTTP server, or HTTPS with `tls`, with the bounds above; `maxConnections` open at once, one
 * beyond closed as it is accepted (ADR 085).
 */
export function boundedServer(handler: (req: IncomingMessage, res: ServerResponse) => void, tls?: { cert: Buffer; key: Buffer }, maxConnections?: number): Server {
  const server = tls
    ? createTlsServer({ ...BOUNDS, cert: tls.cert, key: tls.key, minVersion: 'TLSv1.2', handshakeTimeout: HEADERS_MS }, handler)
    : createServer(BOUNDS, handler);
  if (maxConnections !== undefined) server.maxConnections = maxConnections;
  return server;
}
