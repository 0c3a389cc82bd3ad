// CORS for the HTTP door: a page on an --allowed-origin may call it from a browser (its preflight
// is answered, its answers are readable); a request with any other Origin was refused (403)
// before any of this runs.
//
// Never Access-Control-Allow-Credentials: the door's credential is a bearer header the page sets
// itself, which CORS lets through without it. Allowing credentials would only let a page have
// the browser attach what it attaches on its own (cookies, HTTP auth, a client certificate),
// such as those of a single sign-on proxy in front of the gate.
import type { IncomingMessage, ServerResponse } from 'node:http';

/** Request headers a page may set: what the SDK client sends and the door reads. */
export const ALLOW_HEADERS = ['authorization', 'content-type', 'accept', 'mcp-session-id', 'mcp-protocol-version', 'last-event-id', 'cloakpipe-task'] as const;
/** Response headers a page may read beyond the safelisted ones: what the SDK client reads. */
export const EXPOSE_HEADERS = ['mcp-session-id', 'www-authenticate'] as const;
/** How long a browser may reuse a preflight's answer. */
export const MAX_AGE_SECONDS = 600;

/**
 * An origin exactly as a browser sends it (`scheme://host[:port]`, http or https, lowercase,
 * no default port, no path): any other spelling would never match an `Origin` header.
 */
export function isOrigin(text: string): boolean {
  try {
    const u = new URL(text);
    return (u.protocol === 'http:' || u.protocol === 'https:') && u.origin === text;
  } catch {
    return false;
  }
}

/** A CORS preflight: a browser asking, before the request, whether it may send it. */
export function isPreflight(req: IncomingMessage): boolean {
  return req.method === 'OPTIONS' && req.headers.origin !== undefined && req.headers['access-control-request-method'] !== undefined;
}

/** On every answer to an allowed origin (errors too, so the page can read why). */
export function allowOrigin(res: ServerResponse, origin: string): void {
  res.setHeader('Access-Control-Allow-Origin', origin);
  res.setHeader('Access-Control-Expose-Headers', EXPOSE_HEADERS.join(', '));
}

/** A preflight from an allowed origin, answered without a token (a browser sends none on it). */
export function answerPreflight(res: ServerResponse, methods: readonly string[]): void {
  res
    .writeHead(204, {
      'Access-Control-Allow-Methods': methods.join(', '),
      'Access-Control-Allow-Headers': ALLOW_HEADERS.join(', '),
      'Access-Control-Max-Age': String(MAX_AGE_SECONDS),
    })
    .end();
}
