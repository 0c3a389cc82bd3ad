// Who may call the HTTP door: static bearer tokens that each name an agent id, compared in
// constant time (a digest of each, so neither length nor prefix leaks through timing), and the
// Origin allow-list that stops a web page from reaching a loopback gate (DNS rebinding).
import { createHash, timingSafeEqual } from 'node:crypto';
import { readSecretFile } from '../keys/secret-file.js';

export class TokenFileError extends Error {}

export interface Principal {
  agent: string;
}

/** A token file: one `TOKEN AGENT_ID` a line; blank lines and `#` comments are skipped. */
export function readTokenFile(path: string): StaticTokens {
  // Read as ssh reads a key: a file others may read gives their holders every agent's token
  // (ADR 105); another user's file (or link) could name a token of theirs for any agent; a FIFO
  // held the start.
  let text: string;
  try {
    text = readSecretFile(path, 'token file').toString('utf8');
  } catch (e) {
    throw new TokenFileError((e as Error).message);
  }
  const tokens: { digest: Buffer; agent: string }[] = [];
  text.split(/\r?\n/).forEach((raw, i) => {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) return;
    const parts = line.split(/\s+/);
    // The token itself is never echoed: only the line number says where the problem is.
    if (parts.length !== 2) throw new TokenFileError(`${path} line ${i + 1}: expected "TOKEN AGENT_ID"`);
    if (parts[0].length < 16) throw new TokenFileError(`${path} line ${i + 1}: a token must be at least 16 characters`);
    tokens.push({ digest: sha256(parts[0]), agent: parts[1] });
  });
  if (tokens.length === 0) throw new TokenFileError(`${path}: no tokens`);
  return new StaticTokens(tokens);
}

const sha256 = (s: string) => createHash('sha256').update(s, 'utf8').digest();

export class StaticTokens {
  constructor(private readonly tokens: { digest: Buffer; agent: string }[]) {}

  /** The agent a `Authorization: Bearer …` header names, or null; every token is compared. */
  check(authorization: string | undefined): Principal | null {
    const m = /^Bearer ([\x21-\x7e]+)$/i.exec(authorization ?? '');
    if (!m) return null;
    const presented = sha256(m[1]);
    let found: Principal | null = null;
    for (const t of this.tokens) if (timingSafeEqual(t.digest, presented) && found === null) found = { agent: t.agent };
    return found;
  }
}

/** An `Origin` is allowed when absent (not a browser) or listed exactly. */
export function originAllowed(origin: string | undefined, allowed: readonly string[]): boolean {
  return origin === undefined || allowed.includes(origin);
}

/**
 * The host a request names: its one `Host` line, or the authority of an absolute-form target
 * (RFC 9112 3.2.2, which then replaces Host); undefined for two Host lines (RFC 9112 3.2: 400),
 * which Node reads as the first while a proxy in front may have checked the last.
 */
export function requestHost(req: { rawHeaders: string[]; url?: string }): string | undefined {
  let host: string | undefined;
  let lines = 0;
  for (let i = 0; i < req.rawHeaders.length; i += 2) if (req.rawHeaders[i].toLowerCase() === 'host') (lines++, (host = req.rawHeaders[i + 1]));
  if (lines > 1) return undefined;
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(req.url ?? '')) return host;
  try {
    return new URL(req.url!).host;
  } catch {
    return undefined;
  }
}

/** The host name a `Host` header names, lowercase, without its port; null when it names none. */
export function hostnameOf(host: string | undefined): string | null {
  if (host === undefined || !/^[A-Za-z0-9.\-]+(:\d+)?$|^\[[0-9A-Fa-f:.]+\](:\d+)?$/.test(host)) return null;
  try {
    return new URL(`http://${host}`).hostname;
  } catch {
    return null;
  }
}

/**
 * The host names a request to a server listening on loopback address `listen` may name in Host
 * (any port: a forwarded one, ssh -L, names its own); any other name is a page whose DNS name was
 * rebound to loopback.
 */
export function loopbackNames(listen: string): Set<string> {
  return new Set(['localhost', '127.0.0.1', '[::1]', hostnameOf(listen.includes(':') && !listen.startsWith('[') ? `[${listen}]` : listen) ?? 'localhost']);
}

export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || host === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(host);
}
