// One ledger entry: RFC 8785 JSON with seq, ts, prev (hash of the previous entry), kind, the
// decision fields (digests only) and `sig`, Ed25519 by the gate key over the entry without sig.
// The entry hash covers the signature too, so the chain pins each entry's exact bytes.
import { verify, type KeyObject } from 'node:crypto';
import type { Signer } from '../core/signer.js';
import { canonicalBytes, canonicalize } from '../core/canonical.js';
import { sha256Hex } from '../core/digest.js';
import { isJsonObject, type JsonValue } from '../core/json.js';
import { parseStrict, WireError } from '../wire/strict-parse.js';

export const GENESIS_PREV = 'sha256:' + '0'.repeat(64);

export type { EntryFields, EntryKind, LedgerEntry, EntryOf, ResultFields, DecisionFields } from '../core/entries.js';

/** A parsed entry before its kind is trusted: any JSON object with the header fields. */
export interface EntryBody {
  v: 1;
  seq: number;
  ts: string; // ISO 8601 UTC with milliseconds
  prev: string;
  kind: string;
  [field: string]: JsonValue;
}

export type Entry = EntryBody & { sig: string };

export function signEntry(body: EntryBody, signer: Signer): Entry {
  const sig = signer.sign(canonicalBytes(body)).toString('base64');
  return { ...body, sig };
}

export function entryHash(entry: Entry): string {
  return 'sha256:' + sha256Hex(canonicalBytes(entry));
}

/**
 * `sig` as the gate writes it: the one base64 spelling of a 64-byte Ed25519 signature. Buffer.from
 * also decodes other spellings to the same bytes (text after the padding, stray characters, no
 * padding), so the newest entry, which no later `prev` pins, could carry edited bytes that verify.
 */
export const SIG_FORM = /^[A-Za-z0-9+/]{85}[AQgw]==$/;

export function verifyEntrySignature(entry: Entry, key: KeyObject): boolean {
  const { sig, ...body } = entry;
  if (typeof sig !== 'string' || !SIG_FORM.test(sig)) return false;
  try {
    return verify(null, canonicalBytes(body), key, Buffer.from(sig, 'base64'));
  } catch {
    return false;
  }
}

/** A stored entry that is not the exact RFC 8785 bytes of a JSON object. */
export class EntryFormatError extends Error {
  constructor(detail: string) {
    super(detail);
    this.name = 'EntryFormatError';
  }
}

/**
 * Reads one stored entry. Lenient readers disagree on a duplicate key (JSON.parse keeps the
 * last, SQLite's json_extract the first), so a body is read strictly and must be byte-identical
 * to the RFC 8785 form of what it parses to: then every reader sees the one value the signature
 * covers, and the entry's hash is the hash of the stored bytes.
 */
export function parseStoredEntry(body: string): Entry {
  let v: JsonValue;
  try {
    v = parseStrict(body);
  } catch (e) {
    throw new EntryFormatError(e instanceof WireError ? `entry is not strict JSON (${e.code})` : 'entry is not strict JSON');
  }
  if (!isJsonObject(v)) throw new EntryFormatError('entry is not an object');
  if (canonicalize(v) !== body) throw new EntryFormatError('entry is not in its RFC 8785 form');
  return v as unknown as Entry;
}

/** The hash of a stored body already known to be canonical (parseStoredEntry). */
export function storedHash(body: string): string {
  return 'sha256:' + sha256Hex(body);
}
