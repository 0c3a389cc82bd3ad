// --public-url: the MCP endpoint as clients reach it (through a load balancer or a TLS proxy, or
// by a name rather than the listen address), which RFC 9728 metadata (`resource`) and the 401's
// `WWW-Authenticate: Bearer resource_metadata=…` name. Never taken from a request's Host: any
// caller can send any Host, and a 401 naming metadata at a URL the caller chose would point the
// next client at an authorization server of the caller's choosing (docs/decisions/059).
import { UsageError } from './args.js';
import { isLoopback } from '../doors/http-auth.js';

/** The checked URL; errors name the flag, never the value (it may hold credentials). */
export function parsePublicUrl(text: string, path: string): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new UsageError('--public-url is not a URL');
  }
  // Clients send their bearer token there: in clear only to this machine.
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && isLoopback(url.hostname))) throw new UsageError('--public-url must be https: (http: only on a loopback host)');
  if (url.username !== '' || url.password !== '') throw new UsageError('--public-url must not carry credentials');
  // RFC 9728: a resource identifier has no fragment; a query would be dropped by the metadata URL.
  if (/[?#]/.test(text)) throw new UsageError('--public-url must have no query or fragment');
  if (url.pathname === '/' && path !== '/') throw new UsageError('--public-url names the MCP endpoint with its path, as clients reach it (e.g. https://mcp.example.com/mcp)');
  return url;
}

/** A --listen host that stands for every address (0.0.0.0, ::): none a client could use. */
export function isWildcard(host: string): boolean {
  try {
    const h = new URL(`http://${host.includes(':') ? `[${host}]` : host}`).hostname;
    return h === '0.0.0.0' || h === '[::]';
  } catch {
    return false;
  }
}
