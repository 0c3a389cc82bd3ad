// The per-entry part of verification, pure and parallel-safe (it runs in worker threads): parse
// one entry, recompute its hash and check its Ed25519 signature. What depends on order (seq,
// prev, time, epochs) is checked afterwards, in order, by chain.ts.
import { createHash, verify, type KeyObject } from 'node:crypto';
import { canonicalize } from '../../core/canonical.js';
import { leafHash } from '../merkle.js';
import type { Entry } from '../entry.js';

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
    }
  | { ok: false; seq: number | null; detail: string };

const TS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

export function checkEntryLine(line: string, key: KeyObject): CheckedEntry {
  let e: Entry;
  try {
    e = JSON.parse(line) as Entry;
  } catch {
    return { ok: false, seq: null, detail: 'entry is not JSON' };
  }
  if (e === null || typeof e !== 'object' || Array.isArray(e)) return { ok: false, seq: null, detail: 'entry is not an object' };
  const seq = Number.isSafeInteger(e.seq) && e.seq >= 0 ? e.seq : null;
  if (seq === null) return { ok: false, seq: null, detail: 'entry has no valid seq' };
  if (e.v !== 1) return { ok: false, seq, detail: 'entry version is not 1' };
  if (typeof e.ts !== 'string' || !TS.test(e.ts) || Number.isNaN(Date.parse(e.ts))) return { ok: false, seq, detail: 'entry ts is not an ISO 8601 UTC time' };
  if (typeof e.prev !== 'string' || typeof e.kind !== 'string' || typeof e.sig !== 'string') return { ok: false, seq, detail: 'entry lacks prev, kind or sig' };
  // RFC 8785 of the entry and of the entry without sig share every member but one: canonicalize
  // each member once and join twice (the same bytes as entryHash and verifyEntrySignature).
  let full: string;
  let body: string;
  try {
    const obj = e as Record<string, unknown>;
    const keys = Object.keys(obj).filter((k) => obj[k] !== undefined).sort();
    const members = keys.map((k) => JSON.stringify(k) + ':' + canonicalize(obj[k]));
    full = '{' + members.join(',') + '}';
    body = '{' + members.filter((_, i) => keys[i] !== 'sig').join(',') + '}';
  } catch {
    return { ok: false, seq, detail: 'entry cannot be canonicalized' };
  }
  const digest = createHash('sha256').update(full).digest();
  let sigOk: boolean;
  try {
    sigOk = verify(null, Buffer.from(body, 'utf8'), key, Buffer.from(e.sig, 'base64'));
  } catch {
    sigOk = false;
  }
  const out: CheckedEntry = { ok: true, seq, ts: e.ts, prev: e.prev, kind: e.kind, hash: 'sha256:' + digest.toString('hex'), leaf: leafHash(digest), sigOk };
  if (e.kind === 'epoch') out.epoch = { first: e.first, last: e.last, size: e.size, root: e.root };
  return out;
}
