// Digests are how payloads appear anywhere outside the call path: `sha256:<hex>`.
import { hash } from 'node:crypto';
import { canonicalize } from './canonical.js';

export type Digest = `sha256:${string}`;

// One-shot: no Hash object per digest (a few per call on the gate's path).
export function sha256Hex(data: string | Uint8Array): string {
  return hash('sha256', data, 'hex');
}

export function digestBytes(data: string | Uint8Array): Digest {
  return `sha256:${sha256Hex(data)}`;
}

/** Digest of a JSON value's RFC 8785 form. */
export function digestJson(value: unknown): Digest {
  return digestBytes(canonicalize(value)); // hashed as UTF-8, the same bytes as canonicalBytes
}

export function isDigest(s: unknown): s is Digest {
  return typeof s === 'string' && /^sha256:[0-9a-f]{64}$/.test(s);
}
