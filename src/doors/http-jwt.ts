// JWT access tokens (RFC 9068) checked offline against a JWKS file, for the HTTP door. Guards
// against the known ways a verifier is fooled: `alg: none` and HMAC algorithms are not on the
// allow-list, and a JWKS holding a symmetric or a private key does not load, so a public key
// can never serve as an HMAC secret (the key-confusion attack); the key is chosen by `kid` and
// must suit the token's algorithm; `typ` must be at+jwt; `iss`, `aud` and `exp` are required and checked with `nbf`
// (little clock leeway); the file is re-read when it changes (key rotation), and one that stops
// loading refuses every token until it is mended (fail closed). Nothing of a token reaches a
// log or an error: a refusal is only a 401.
import { statSync } from 'node:fs';
import { readBoundedFile } from '../util/regular-file.js';
import { createLocalJWKSet, jwtVerify, type JSONWebKeySet, type JWTPayload } from 'jose';
import { parseStrict, WireError } from '../wire/strict-parse.js';
import { isJsonObject } from '../core/json.js';
import type { Principal } from './http-auth.js';

/** Asymmetric signatures only: never `none`, never HS* (a shared secret is not a public key). */
export const JWT_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA', 'Ed25519'] as const;
const LEEWAY_S = 30;
/** An agent id from a token: printable, bounded (it names the Cedar principal and every entry). */
const AGENT = /^[\x21-\x7e]{1,256}$/;
/** A JWKS is a few keys; a file larger than this is not one. */
const MAX_JWKS_BYTES = 1 << 20;

export class JwksError extends Error {}

export interface JwtOptions {
  jwksPath: string;
  issuer: string;
  audience: string;
  clock?: () => number;
}

type KeySet = ReturnType<typeof createLocalJWKSet>;

/** A JWKS document of public keys for signatures; anything else is refused with the reason. */
export function loadJwks(text: string, where: string): JSONWebKeySet {
  let doc;
  try {
    doc = parseStrict(text.replace(/^\uFEFF/, ''));
  } catch (e) {
    if (e instanceof WireError) throw new JwksError(`${where} is not strict JSON (${e.code})`);
    throw e;
  }
  if (!isJsonObject(doc) || !Array.isArray(doc.keys) || doc.keys.length === 0) throw new JwksError(`${where}: expected {"keys": [...]} with at least one key`);
  doc.keys.forEach((k, i) => {
    if (!isJsonObject(k)) throw new JwksError(`${where}: key ${i} is not an object`);
    if (k.kty === 'oct') throw new JwksError(`${where}: key ${i} is symmetric (kty oct): only public keys verify tokens here`);
    if (k.kty !== 'RSA' && k.kty !== 'EC' && k.kty !== 'OKP') throw new JwksError(`${where}: key ${i} has an unknown kty`);
    for (const priv of ['d', 'p', 'q', 'dp', 'dq', 'qi', 'k']) if (priv in k) throw new JwksError(`${where}: key ${i} holds private key material ("${priv}"): publish only the public key`);
    if (k.use !== undefined && k.use !== 'sig') throw new JwksError(`${where}: key ${i} is not a signature key (use ${JSON.stringify(k.use)})`);
    if (k.alg !== undefined && !(JWT_ALGORITHMS as readonly unknown[]).includes(k.alg)) throw new JwksError(`${where}: key ${i} names an algorithm that is not allowed`);
  });
  const kids = doc.keys.map((k) => (k as { kid?: unknown }).kid).filter((x) => x !== undefined);
  if (new Set(kids).size !== kids.length) throw new JwksError(`${where}: two keys share a kid`);
  return doc as unknown as JSONWebKeySet;
}

/**
 * The file's text, read on the main thread while the gate runs: a name swapped for a FIFO or a
 * link to /dev/zero must not stop it (util/regular-file.ts), and a JWKS is a few keys.
 */
function readJwksFile(path: string): string {
  let read: ReturnType<typeof readBoundedFile>;
  try {
    read = readBoundedFile(path, MAX_JWKS_BYTES, { followLinks: true });
  } catch (e) {
    if ((e as { code?: unknown }).code === 'not a regular file') throw new JwksError(`--jwks ${path} is not a regular file`);
    throw e;
  }
  if (read === null) throw new JwksError(`--jwks ${path} is larger than ${MAX_JWKS_BYTES} bytes`);
  return read.bytes.toString('utf8');
}

export class JwtVerifier {
  private keys: KeySet | null = null;
  private stamp = '';

  constructor(private readonly o: JwtOptions) {
    this.reload(true);
  }

  get issuer(): string {
    return this.o.issuer;
  }

  /** Re-reads the file when its size or time changed; at start-up a failure throws (exit 2). */
  private reload(startup = false): void {
    let stamp: string;
    try {
      const st = statSync(this.o.jwksPath);
      stamp = `${st.size}:${st.mtimeMs}:${st.ino}`;
    } catch (e) {
      if (startup) throw new JwksError(`cannot read --jwks ${this.o.jwksPath}: ${(e as NodeJS.ErrnoException).code ?? 'error'}`);
      this.keys = null;
      this.stamp = '';
      return;
    }
    if (stamp === this.stamp) return;
    this.stamp = stamp;
    try {
      this.keys = createLocalJWKSet(loadJwks(readJwksFile(this.o.jwksPath), `--jwks ${this.o.jwksPath}`));
    } catch (e) {
      if (startup) throw e instanceof JwksError ? e : new JwksError(`--jwks ${this.o.jwksPath} does not load`);
      this.keys = null; // fail closed until the file is mended
    }
  }

  /** The agent a `Authorization: Bearer <JWT>` names, or null for any token that does not verify. */
  async check(authorization: string | undefined): Promise<Principal | null> {
    // The scheme's name is case-insensitive (RFC 7235 §2.1), as for the static tokens.
    const m = /^Bearer ([A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+)$/i.exec(authorization ?? '');
    if (!m) return null;
    this.reload();
    const keys = this.keys;
    if (!keys) return null;
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(m[1], keys, {
        issuer: this.o.issuer,
        audience: this.o.audience,
        algorithms: [...JWT_ALGORITHMS],
        requiredClaims: ['exp', 'iss', 'aud'],
        // RFC 9068 section 4: an ID token (or any other JWT) of the same issuer and audience is not
        // an access token. jose compares it without case and with or without "application/".
        typ: 'at+jwt',
        clockTolerance: LEEWAY_S,
        ...(this.o.clock ? { currentDate: new Date(this.o.clock()) } : {}),
      }));
    } catch {
      return null;
    }
    const agent = typeof payload.sub === 'string' ? payload.sub : typeof payload.client_id === 'string' ? payload.client_id : undefined;
    return agent !== undefined && AGENT.test(agent) ? { agent } : null;
  }
}
