// Approval receipts (product.md section 5): a person's Ed25519 signature over one call's
// fingerprint, with a short validity window and a nonce. Guards against an agent (or text
// steering it) performing a sensitive call nobody approved, or stretching one approval to a
// different call, a later time or a second call. Pure functions: bytes and keys in, a verdict
// out; the single-use check lives with the operations database (used.ts).
//
// Strict by design: a receipt is exactly the seven fields below, each of its exact type and
// format; anything else is `malformed`, never "probably fine".
import { randomBytes, verify, type KeyObject } from 'node:crypto';
import { canonicalBytes } from '../core/canonical.js';
import { isJsonObject } from '../core/json.js';
import { digestJson, isDigest, type Digest } from '../core/digest.js';
import type { Signer } from '../core/signer.js';
import { asSigner } from '../keys/file.js';

export interface Receipt {
  v: 1;
  fingerprint: Digest;
  /** Key id of the approver: `sha256:` + hex SHA-256 of the public key's SPKI DER. */
  approver: Digest;
  issued_at: string;
  expires_at: string;
  nonce: string;
  /** Base64 Ed25519 signature over the RFC 8785 form of the other six fields. */
  signature: string;
}

export type SignedPart = Omit<Receipt, 'signature'>;

/** Which check a receipt failed; the first word of every `approval_invalid` detail. */
export type ReceiptCheck =
  | 'malformed'
  | 'unknown_approver'
  | 'bad_signature'
  | 'fingerprint_mismatch'
  | 'not_yet_valid'
  | 'expired'
  | 'already_used';

export type ReceiptVerdict =
  | { ok: true; receipt: Receipt; id: Digest }
  | { ok: false; check: ReceiptCheck; detail: string };

export const RECEIPT_FIELDS = ['v', 'fingerprint', 'approver', 'issued_at', 'expires_at', 'nonce', 'signature'] as const;

/** Tolerated clock difference between the approver's machine and the gate for `issued_at`. */
export const DEFAULT_SKEW_MS = 30_000;

const TIME = /^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]{1,3})?Z$/;
const NONCE = /^[A-Za-z0-9_-]{16,128}$/;
const SIGNATURE = /^[A-Za-z0-9+/]{86}==$/;

function fail(check: ReceiptCheck, detail: string): ReceiptVerdict {
  return { ok: false, check, detail: `${check}: ${detail}` };
}

/** Milliseconds of a strict ISO 8601 UTC timestamp, or null (no offsets, no Feb 30). */
export function parseTime(s: unknown): number | null {
  if (typeof s !== 'string' || !TIME.test(s)) return null;
  const ms = Date.parse(s);
  if (!Number.isFinite(ms)) return null;
  // Date.parse rolls some impossible dates over; a round trip catches them.
  if (new Date(ms).toISOString().slice(0, 19) !== s.slice(0, 19)) return null;
  return ms;
}

/** Shape check: exactly the receipt's fields, each well formed. */
export function parseReceipt(v: unknown): { ok: true; receipt: Receipt } | { ok: false; check: 'malformed'; detail: string } {
  const bad = (what: string) => ({ ok: false as const, check: 'malformed' as const, detail: `malformed: ${what}` });
  if (!isJsonObject(v)) return bad('a receipt must be a JSON object');
  for (const k of Object.keys(v)) if (!(RECEIPT_FIELDS as readonly string[]).includes(k)) return bad('unknown field in receipt');
  for (const k of RECEIPT_FIELDS) if (!Object.prototype.hasOwnProperty.call(v, k)) return bad(`missing field "${k}"`);
  if (v.v !== 1) return bad('"v" must be 1');
  if (!isDigest(v.fingerprint)) return bad('"fingerprint" must be sha256:<64 hex>');
  if (!isDigest(v.approver)) return bad('"approver" must be a key id sha256:<64 hex>');
  const issued = parseTime(v.issued_at);
  if (issued === null) return bad('"issued_at" must be an ISO 8601 UTC time');
  const expires = parseTime(v.expires_at);
  if (expires === null) return bad('"expires_at" must be an ISO 8601 UTC time');
  if (expires <= issued) return bad('"expires_at" is not after "issued_at"');
  if (typeof v.nonce !== 'string' || !NONCE.test(v.nonce)) return bad('"nonce" must be 16-128 base64url characters');
  if (typeof v.signature !== 'string' || !SIGNATURE.test(v.signature)) return bad('"signature" must be base64 of 64 bytes');
  // Only the canonical base64 spelling: no second encoding of the same signature bytes.
  if (Buffer.from(v.signature, 'base64').toString('base64') !== v.signature) return bad('"signature" is not canonical base64');
  return { ok: true, receipt: v as unknown as Receipt };
}

export function signedPart(r: Receipt): SignedPart {
  const { signature: _s, ...rest } = r;
  return rest;
}

/**
 * A receipt's id: the digest of its signed part. Single use is keyed on it, so neither a
 * re-encoded signature nor a reformatted file makes a used receipt new again.
 */
export function receiptId(r: Receipt | SignedPart): Digest {
  const { signature: _s, ...rest } = r as Receipt;
  return digestJson(rest);
}

export interface SignOptions {
  /** The approver's key: a private KeyObject (a key file) or a Signer (a token). */
  privateKey: KeyObject | Signer;
  fingerprint: Digest;
  /** ms since the epoch */
  issuedAt: number;
  ttlMs: number;
  nonce?: string;
}

export function signReceipt(o: SignOptions): Receipt {
  let signer: Signer;
  try {
    signer = asSigner(o.privateKey);
  } catch {
    throw new TypeError('an approver key must be an Ed25519 private key');
  }
  if (!isDigest(o.fingerprint)) throw new TypeError('fingerprint must be sha256:<64 hex>');
  if (!Number.isSafeInteger(o.ttlMs) || o.ttlMs <= 0) throw new RangeError('ttl must be a positive number of milliseconds');
  const body: SignedPart = {
    v: 1,
    fingerprint: o.fingerprint,
    approver: signer.keyId as Digest,
    issued_at: new Date(o.issuedAt).toISOString(),
    expires_at: new Date(o.issuedAt + o.ttlMs).toISOString(),
    nonce: o.nonce ?? randomBytes(16).toString('base64url'),
  };
  const signature = signer.sign(canonicalBytes(body)).toString('base64');
  return { ...body, signature };
}


export interface VerifyOptions {
  /** The fingerprint of the call the receipt is presented for. */
  fingerprint: Digest;
  /** Approver public keys by key id (the gate's --approver-key files). */
  approvers: ReadonlyMap<string, KeyObject>;
  /** ms since the epoch */
  now: number;
  skewMs?: number;
}

/**
 * Everything but single use, in an order that reveals nothing about unsigned input: shape,
 * approver, signature, then what the signature covers (call binding, validity window).
 */
export function verifyReceipt(v: unknown, o: VerifyOptions): ReceiptVerdict {
  const parsed = parseReceipt(v);
  if (!parsed.ok) return { ok: false, check: 'malformed', detail: parsed.detail };
  const r = parsed.receipt;
  const key = o.approvers.get(r.approver);
  if (!key) return fail('unknown_approver', `approver ${r.approver} is not an --approver-key of this gate`);
  let good = false;
  try {
    good = verify(null, canonicalBytes(signedPart(r)), key, Buffer.from(r.signature, 'base64'));
  } catch {
    good = false;
  }
  if (!good) return fail('bad_signature', 'the signature does not verify with the approver key');
  if (r.fingerprint !== o.fingerprint) return fail('fingerprint_mismatch', `the receipt approves a different call (${r.fingerprint})`);
  const skew = o.skewMs ?? DEFAULT_SKEW_MS;
  if (parseTime(r.issued_at)! > o.now + skew) return fail('not_yet_valid', `the receipt is issued at ${r.issued_at}, in the future`);
  if (o.now >= parseTime(r.expires_at)!) return fail('expired', `the receipt expired at ${r.expires_at}`);
  return { ok: true, receipt: r, id: receiptId(r) };
}

/** The single-use failure, worded like the others. */
export function alreadyUsed(usedAt: string): ReceiptVerdict {
  return fail('already_used', `the receipt was used at ${usedAt}`);
}
