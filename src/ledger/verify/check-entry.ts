// The per-entry part of verification, pure and parallel-safe (it runs in worker threads): parse
// one entry, recompute its hash and check its Ed25519 signature. What depends on order (seq,
// prev, time, epochs) is checked afterwards, in order, by chain.ts. An entry is read strictly
// and its stored bytes must be exactly the RFC 8785 form of what it parses to: a duplicate key
// (`{"outcome":"allow",…,"outcome":"refuse"}`, read one way here and another by SQLite), a
// reordered key or extra whitespace is tampering, even when the signature would still verify.
import { createHash, verify, type KeyObject } from 'node:crypto';
import { canonicalize } from '../../core/canonical.js';
import { leafHash } from '../merkle.js';
import { EntryFormatError, parseStoredEntry, type Entry } from '../entry.js';

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
      epoch?: { first: unknown; last: unknown; size: unknown; root: unknown };
      /** The parsed entry, when the caller asked for it (readers that consume verified entries). */
      entry?: Entry;
    }
  | { ok: false; seq: number | null; detail: string; notCanonical?: true };

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
  for (const x of Array.isArray(v) ? v : Object.values(v)) if (!plainNumbers(x, depth + 1)) return false;
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
  // The line is the entry's RFC 8785 form (checked above), so its hash is the hash of the line;
  // the signature covers the same form without sig.
  const { sig, ...unsigned } = e;
  const digest = createHash('sha256').update(line).digest();
  const body = canonicalize(unsigned);
  let sigOk: boolean;
  try {
    sigOk = verify(null, Buffer.from(body, 'utf8'), key, Buffer.from(sig, 'base64'));
  } catch {
    sigOk = false;
  }
  const out: CheckedEntry = { ok: true, seq, ts: e.ts, prev: e.prev, kind: e.kind, hash: 'sha256:' + digest.toString('hex'), leaf: leafHash(digest), sigOk };
  if (e.kind === 'epoch') out.epoch = { first: e.first, last: e.last, size: e.size, root: e.root };
  if (withEntry) out.entry = e;
  return out;
}

/** The seq a malformed line claims (first occurrence), only to name it in the failure. */
function seqHint(line: string): number | null {
  const m = /"seq":(\d{1,15})[,}]/.exec(line);
  return m ? Number(m[1]) : null;
}
