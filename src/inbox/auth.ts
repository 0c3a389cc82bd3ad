// Who may use the inbox page. A person proves they hold the login token once; the login answers
// with a session cookie that scripts cannot read (HttpOnly) and that no other site's page sends
// (SameSite=Strict), and, in its body, the session's API token (also its CSRF token). The cookie
// alone is not enough: browsers send it to every port of its host, so any web server on
// 127.0.0.1 the approver's browser visits gets it (ADR 069). The API token the page keeps per
// origin and sends in a header, on every API request. Guards against another local user, a web
// page or server in the approver's browser (cross-site request forgery, DNS rebinding to
// loopback, another port) and a leaked page: an approval is a signature with the approver's
// key, so the bar is that of the key.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { readSecretFile, SecretFileError } from '../keys/secret-file.js';

export const COOKIE = 'cloakpipe_inbox';
const SESSION_MS = 12 * 3_600_000;
const MAX_SESSIONS = 64;

export class TokenError extends Error {}

const sha256 = (s: string) => createHash('sha256').update(s, 'utf8').digest();

/**
 * The login token: --auth-token-file, read as a key or PIN file is (the reader's own or root's,
 * mode 0600, a regular file, no link of another user's), at least 16 characters; else a fresh one.
 */
export function loginToken(path: string | undefined): { token: string; generated: boolean } {
  if (path === undefined) return { token: randomBytes(24).toString('base64url'), generated: true };
  let text: string;
  try {
    text = readSecretFile(path, 'login token file').toString('utf8').trim();
  } catch (e) {
    throw new TokenError(e instanceof SecretFileError ? e.message : `cannot read ${path}: ${(e as NodeJS.ErrnoException).code ?? 'error'}`);
  }
  if (!/^[\x21-\x7e]{16,512}$/.test(text)) throw new TokenError(`${path}: the token must be 16 to 512 printable characters, one line`);
  return { token: text, generated: false };
}

interface Session {
  csrf: string;
  expires: number;
}

export class Sessions {
  private readonly token: Buffer;
  private readonly sessions = new Map<string, Session>();

  constructor(
    token: string,
    private readonly clock: () => number = Date.now,
  ) {
    this.token = sha256(token);
  }

  /** Compared as digests in constant time: neither length nor prefix leaks through timing. */
  tokenMatches(presented: string): boolean {
    return timingSafeEqual(this.token, sha256(presented));
  }

  /** A new session: its id (the cookie) and its API token (the CSRF token). */
  open(): { id: string; csrf: string } {
    const now = this.clock();
    for (const [k, s] of this.sessions) if (s.expires <= now) this.sessions.delete(k);
    // Bounded: the oldest session goes first.
    while (this.sessions.size >= MAX_SESSIONS) this.sessions.delete(this.sessions.keys().next().value as string);
    const id = randomBytes(32).toString('base64url');
    const csrf = randomBytes(32).toString('base64url');
    this.sessions.set(id, { csrf, expires: now + SESSION_MS });
    return { id, csrf };
  }

  close(id: string | undefined): void {
    if (id !== undefined) this.sessions.delete(id);
  }

  /** Whether the session `id` is still open (not logged out, expired or evicted). */
  isOpen(id: string): boolean {
    const s = this.sessions.get(id);
    return !!s && s.expires > this.clock();
  }

  /**
   * The session a Cookie header names, or null. Each cookie of the name is tried: any server on
   * another port of this host can set one (a cookie knows no port), with a longer Path, which the
   * browser then sends first (RFC 6265 5.4); taking the first locked the page out for good.
   */
  fromCookie(header: string | undefined): { id: string; csrf: string } | null {
    for (const id of cookieValues(header, COOKIE)) {
      const s = this.sessions.get(id);
      if (s && s.expires > this.clock()) return { id, csrf: s.csrf };
    }
    return null;
  }

  /** Whether `presented` is this session's API token (constant time). */
  csrfMatches(session: { csrf: string }, presented: string | undefined): boolean {
    if (typeof presented !== 'string') return false;
    return timingSafeEqual(sha256(session.csrf), sha256(presented));
  }

  /** `secure`: served over TLS, so the browser never sends the cookie in clear. */
  static setCookie(id: string, secure = false): string {
    return `${COOKIE}=${id}; HttpOnly; SameSite=Strict; Path=/; Max-Age=${SESSION_MS / 1000}${secure ? '; Secure' : ''}`;
  }

  static clearCookie(secure = false): string {
    return `${COOKIE}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0${secure ? '; Secure' : ''}`;
  }
}

function cookieValues(header: string | undefined, name: string): string[] {
  const values: string[] = [];
  for (const part of header?.split(';') ?? []) {
    const i = part.indexOf('=');
    if (i > 0 && part.slice(0, i).trim() === name) values.push(part.slice(i + 1).trim());
  }
  return values;
}
