// One ledger entry: RFC 8785 JSON with seq, ts, prev (hash of the previous entry), kind, the
// decision fields (digests only) and `sig`, Ed25519 by the gate key over the entry without sig.
// The entry hash covers the signature too, so the chain pins each entry's exact bytes.
import { sign, verify, type KeyObject } from 'node:crypto';
import { canonicalBytes } from '../core/canonical.js';
import { sha256Hex } from '../core/digest.js';
import type { JsonObject, JsonValue } from '../core/json.js';

export const GENESIS_PREV = 'sha256:' + '0'.repeat(64);

export type EntryKind =
  | 'startup'
  | 'shutdown'
  | 'decision'
  | 'result'
  | 'operator'
  | 'label'
  | 'pins'
  | 'epoch'
  | 'anchor'
  | 'anchor_failure';

export interface EntryBody {
  v: 1;
  seq: number;
  ts: string; // ISO 8601 UTC with milliseconds
  prev: string;
  kind: EntryKind;
  [field: string]: JsonValue;
}

export type Entry = EntryBody & { sig: string };

/** Fields a caller supplies; seq, ts, prev and sig are the ledger's. */
export type EntryFields = { kind: EntryKind } & JsonObject;

export function signEntry(body: EntryBody, key: KeyObject): Entry {
  const sig = sign(null, canonicalBytes(body), key).toString('base64');
  return { ...body, sig };
}

export function entryHash(entry: Entry): string {
  return 'sha256:' + sha256Hex(canonicalBytes(entry));
}

export function verifyEntrySignature(entry: Entry, key: KeyObject): boolean {
  const { sig, ...body } = entry;
  if (typeof sig !== 'string') return false;
  try {
    return verify(null, canonicalBytes(body), key, Buffer.from(sig, 'base64'));
  } catch {
    return false;
  }
}
