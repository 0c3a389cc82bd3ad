// Strict decoders: a value has exactly one accepted spelling, so a changed character can never
// decode to the same bytes (base64 padding bits, upper-case hex, PEM junk) and slip through.
import { createPublicKey, type KeyObject, X509Certificate } from 'node:crypto';
import { fail } from './errors.js';

const B64 = /^[A-Za-z0-9+/]*={0,2}$/;

export function strictBase64(s: unknown, what: string): Buffer {
  if (typeof s !== 'string' || s.length % 4 !== 0 || !B64.test(s)) fail('malformed', `${what}: not base64`);
  const b = Buffer.from(s, 'base64');
  if (b.toString('base64') !== s) fail('malformed', `${what}: non-canonical base64`);
  return b;
}

export function strictHex(s: unknown, what: string, bytes?: number): Buffer {
  if (typeof s !== 'string' || !/^(?:[0-9a-f]{2})*$/.test(s)) fail('malformed', `${what}: not lower-case hex`);
  if (bytes !== undefined && s.length !== bytes * 2) fail('malformed', `${what}: expected ${bytes} bytes`);
  return Buffer.from(s, 'hex');
}

export function safeInteger(v: unknown, what: string): number {
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) fail('malformed', `${what}: not a non-negative integer`);
  return v;
}

/** PEM blocks of one label, in order. */
export function pemBlocks(pem: string, label: string): Buffer[] {
  const re = new RegExp(`-----BEGIN ${label}-----([A-Za-z0-9+/=\\s]*?)-----END ${label}-----`, 'g');
  const out: Buffer[] = [];
  for (const m of pem.matchAll(re)) out.push(Buffer.from(m[1].replace(/\s+/g, ''), 'base64'));
  return out;
}

export function parsePublicKey(pem: string | KeyObject, what: string): KeyObject {
  if (typeof pem !== 'string') {
    if (pem.type !== 'public') fail('key_invalid', `${what}: not a public key`);
    return pem;
  }
  try {
    return createPublicKey(pem);
  } catch {
    fail('key_invalid', `${what}: not a PEM public key`);
  }
}

export function parseCertificates(pem: string, what: string): Buffer[] {
  const blocks = pemBlocks(pem, 'CERTIFICATE');
  if (blocks.length === 0) fail('key_invalid', `${what}: no certificate`);
  for (const b of blocks) {
    try {
      new X509Certificate(b);
    } catch {
      fail('key_invalid', `${what}: unreadable certificate`);
    }
  }
  return blocks;
}

export type DigestSpec = { algorithm: 'sha256' | 'sha384' | 'sha512'; value: Buffer };

const DIGEST_LEN = { sha256: 32, sha384: 48, sha512: 64 } as const;

/** Parses `sha256:HEX` (also sha384 / sha512). */
export function parseDigest(s: string): DigestSpec | null {
  const m = /^(sha256|sha384|sha512):([0-9a-f]+)$/.exec(s);
  if (!m) return null;
  const algorithm = m[1] as DigestSpec['algorithm'];
  if (m[2].length !== DIGEST_LEN[algorithm] * 2) return null;
  return { algorithm, value: Buffer.from(m[2], 'hex') };
}

export function formatDigest(d: DigestSpec): string {
  return `${d.algorithm}:${d.value.toString('hex')}`;
}
