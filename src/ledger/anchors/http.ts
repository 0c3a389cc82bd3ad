// The one place anchors touch the network: a POST/GET with a deadline and a size cap. Verification
// never imports this (cloakpipe verify is offline).
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { fail } from './errors.js';

export type HttpResult = { status: number; headers: Record<string, string | string[] | undefined>; body: Buffer };

export function httpSend(
  method: 'GET' | 'POST',
  url: string,
  body: Uint8Array | undefined,
  opts: { contentType?: string; accept?: string; timeoutMs: number; maxBytes: number },
): Promise<HttpResult> {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    fail('unavailable', 'invalid URL');
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') fail('unavailable', `unsupported URL scheme ${u.protocol}`);
  const req = u.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise<HttpResult>((resolve, reject) => {
    const headers: Record<string, string | number> = {};
    if (opts.contentType) headers['content-type'] = opts.contentType;
    if (opts.accept) headers.accept = opts.accept;
    if (body) headers['content-length'] = body.length;
    // No keep-alive: one request per anchor, and a pooled socket the peer has since closed would
    // turn into a spurious ECONNRESET.
    const r = req(u, { method, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (c: Buffer) => {
        size += c.length;
        if (size > opts.maxBytes) return stop(new Error('too large'));
        chunks.push(c);
      });
      res.on('end', () => {
        clearTimeout(deadline);
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) });
      });
      res.on('error', stop);
    });
    const stop = (e: Error) => {
      clearTimeout(deadline);
      reject(e);
      r.destroy();
    };
    // One deadline for the whole exchange, not an idle timer: a peer that drips a byte now and
    // then would otherwise hold the anchor, and the gate's shutdown epoch behind it, for ever.
    const deadline = setTimeout(() => stop(new Error('timeout')), opts.timeoutMs);
    r.on('error', stop);
    if (body) r.write(body);
    r.end();
  }).catch((e: Error) => fail('unavailable', `${method} ${u.origin}${u.pathname}: ${e.message === 'timeout' ? 'timed out' : e.message}`));
}

export const httpPost = (url: string, body: Uint8Array, opts: { contentType: string; accept?: string; timeoutMs: number; maxBytes: number }) =>
  httpSend('POST', url, body, opts);
export const httpGet = (url: string, opts: { accept?: string; timeoutMs: number; maxBytes: number }) => httpSend('GET', url, undefined, opts);
