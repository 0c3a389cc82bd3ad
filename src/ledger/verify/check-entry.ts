// The per-entry part of verification, pure and parallel-safe (it runs in worker threads): parse
// one entry, recompute its hash and check its Ed25519 signature. What depends on order (seq,
// prev, time, epochs) is checked afterwards, in order, by chain.ts. An entry is read strictly
// and its stored bytes must be exactly the RFC 8785 form of what it parses to: a duplicate key
// (`{"outcome":"allow",…,"outcome":"refuse"}`, read one way here and another by SQLite), a
// reordered key or extra whitespace is tampering, even when the signature would still verify.
import { hash, verify, type KeyObject } from 'node:crypto';
import { canonicalize } from '../../core/canonical.js';
import { EntryFormatError, parseStoredEntry, SIG_FORM, type Entry } from '../entry.js';
import { unknownEpochMember } from './members.js';

export type CheckedEntry =
  | {
      ok: true;
      seq: number;
      ts: string;
      prev: string;
      kind: string;
      hash: string; // sha256:HEX of the canonical entry, signature included
      leaf: Uint8Array; // its RFC 6962 leaf hash (the epoch tree's leaf)
      sigOk: boolean;
      epoch?: { first: unknown; last: unknown; size: unknown; root: unknown; extra: string | null };
      /** The parsed entry, when the caller asked for it (readers that consume verified entries). */
      entry?: Entry;
    }
  | { ok: false; seq: number | null; detail: string; notCanonical?: true };

/** 0x00 and an entry's hash: the RFC 6962 leaf input (merkle.ts leafHash), filled per entry. */
const LEAF_INPUT = Buffer.alloc(33);
const TS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
/** An escaped surrogate: the strict reader refuses a lone one, JSON.parse does not. */
const SURROGATE_ESCAPE = /\\u[dD][89a-fA-F]/;

/**
 * parseStoredEntry, the fast way when it gives the same answer: JSON.parse (native) is taken
 * only when the line is the RFC 8785 form of what it parsed to (so no duplicate key, no other
 * spelling of a number or string) and holds none of what the strict reader refuses and
 * JSON.parse accepts (an escaped lone surrogate, an integer outside ±(2^53-1), nesting deeper
 * than 64). Anything else goes to parseStoredEntry, which decides (and names the problem).
 */
export function readEntryLine(line: string): Entry {
  let v: unknown;
  try {
    v = JSON.parse(line);
  } catch {
    return parseStoredEntry(line);
  }
  if (v === null || typeof v !== 'object' || Array.isArray(v) || SURROGATE_ESCAPE.test(line) || !plainNumbers(v, 0)) return parseStoredEntry(line);
  let same: boolean;
  try {
    same = canonicalize(v) === line;
  } catch {
    same = false;
  }
  return same ? (v as Entry) : parseStoredEntry(line);
}

/** Every number a safe integer or not an integer at all, and nesting within the strict reader's 64. */
function plainNumbers(v: unknown, depth: number): boolean {
  if (typeof v === 'number') return !Number.isInteger(v) || Number.isSafeInteger(v);
  if (v === null || typeof v !== 'object') return true;
  if (depth >= 64) return false;
  if (Array.isArray(v)) {
    for (const x of v) if (!plainNumbers(x, depth + 1)) return false;
  } else {
    for (const k in v) if (!plainNumbers((v as Record<string, unknown>)[k], depth + 1)) return false;
  }
  return true;
}

export function checkEntryLine(line: string, key: KeyObject, withEntry = false): CheckedEntry {
  let e: Entry;
  try {
    e = readEntryLine(line);
  } catch (err) {
    if (!(err instanceof EntryFormatError)) throw err;
    return { ok: false, seq: seqHint(line), detail: err.message, notCanonical: true };
  }
  const seq = Number.isSafeInteger(e.seq) && e.seq >= 0 ? e.seq : null;
  if (seq === null) return { ok: false, seq: null, detail: 'entry has no valid seq' };
  if (e.v !== 1) return { ok: false, seq, detail: 'entry version is not 1' };
  if (typeof e.ts !== 'string' || !TS.test(e.ts) || Number.isNaN(Date.parse(e.ts))) return { ok: false, seq, detail: 'entry ts is not an ISO 8601 UTC time' };
  if (typeof e.prev !== 'string' || typeof e.kind !== 'string' || typeof e.sig !== 'string') return { ok: false, seq, detail: 'entry lacks prev, kind or sig' };
  // Another spelling of the same signature bytes is another entry: the hash, the chain and an
  // epoch's leaf are of the stored line, and the newest entry has no successor to pin them.
  if (!SIG_FORM.test(e.sig)) return { ok: false, seq, detail: 'entry sig is not the base64 of one Ed25519 signature', notCanonical: true };
  // The line is the entry's RFC 8785 form (checked above), so its hash is the hash of the line;
  // the signature covers the same form without sig: the line with that member cut out.
  const hex = hash('sha256', line);
  const body = unsignedForm(line, e.sig) ?? canonicalize({ ...e, sig: undefined }); // canonicalize drops an undefined member
  let sigOk: boolean;
  try {
    sigOk = verify(null, Buffer.from(body, 'utf8'), key, signatureBytes(e.sig));
  } catch {
    sigOk = false;
  }
  LEAF_INPUT.write(hex, 1, 'hex');
  const out: CheckedEntry = { ok: true, seq, ts: e.ts, prev: e.prev, kind: e.kind, hash: 'sha256:' + hex, leaf: hash('sha256', LEAF_INPUT, 'buffer'), sigOk };
  if (e.kind === 'epoch') out.epoch = { first: e.first, last: e.last, size: e.size, root: e.root, extra: unknownEpochMember(e) };
  if (withEntry) out.entry = e;
  return out;
}

/**
 * A canonical entry line without its top-level `"sig"` member: RFC 8785 writes the members in
 * key order with nothing between them, so dropping one leaves exactly the canonical form of the
 * rest (what was signed). `"sig"` sorts after `"kind"`, `"prev"` and `"seq"`, so the member is
 * `,"sig":…` and it is in the line; when that text occurs once, the occurrence is the member.
 * Null when it occurs more than once (a nested `"sig"` of the same value: the caller then
 * writes the unsigned form itself).
 */
export function unsignedForm(line: string, sig: string): string | null {
  const member = ',"sig":' + JSON.stringify(sig);
  const at = line.indexOf(member);
  if (at === -1 || line.indexOf(member, at + 1) !== -1) return null;
  return line.slice(0, at) + line.slice(at + member.length);
}

const BASE64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
/** Each UTF-16 code unit's base64 digit, or -1. */
const DIGIT = new Int8Array(65536).fill(-1);
for (let i = 0; i < 64; i++) DIGIT[BASE64.charCodeAt(i)] = i;

/**
 * An Ed25519 signature's 64 bytes from its base64. Decoded here, in plain code, when it is the
 * plain 88-character form (86 digits and "=="), where Buffer.from gives the same bytes:
 * Buffer.from's vectorised decoder, run between two verifies, makes each verify ~5 µs slower on
 * this CPU (measured, ADR 044). Any other spelling goes to Buffer.from, which decides as before.
 */
export function signatureBytes(b64: string): Uint8Array {
  if (b64.length !== 88 || b64.charCodeAt(86) !== 0x3d || b64.charCodeAt(87) !== 0x3d) return Buffer.from(b64, 'base64');
  const out = new Uint8Array(64);
  let bad = 0;
  for (let i = 0, o = 0; i < 84; i += 4, o += 3) {
    const a = DIGIT[b64.charCodeAt(i)], b = DIGIT[b64.charCodeAt(i + 1)], c = DIGIT[b64.charCodeAt(i + 2)], d = DIGIT[b64.charCodeAt(i + 3)];
    bad |= a | b | c | d;
    out[o] = (a << 2) | (b >> 4);
    out[o + 1] = (b << 4) | (c >> 2);
    out[o + 2] = (c << 6) | d;
  }
  const a = DIGIT[b64.charCodeAt(84)], b = DIGIT[b64.charCodeAt(85)];
  out[63] = (a << 2) | (b >> 4);
  return (bad | a | b) < 0 ? Buffer.from(b64, 'base64') : out;
}

/** The seq a malformed line claims (first occurrence), only to name it in the failure. */
function seqHint(line: string): number | null {
  const m = /"seq":(\d{1,15})[,}]/.exec(line);
  return m ? Number(m[1]) : null;
}
