// The per-entry part of verification, pure and parallel-safe (it runs in worker threads): parse
// one entry, recompute its hash and check its Ed25519 signature. What depends on order (seq,
// prev, time, epochs) is checked afterwards, in order, by chain.ts.
import type { KeyObject } from 'node:crypto';
import { entryHash, verifyEntrySignature, type Entry } from '../entry.js';

export type CheckedEntry =
  | {
      ok: true;
      seq: number;
      ts: string;
      prev: string;
      kind: string;
      hash: string; // sha256:HEX of the canonical entry, signature included
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
  let hash: string;
  try {
    hash = entryHash(e);
  } catch {
    return { ok: false, seq, detail: 'entry cannot be canonicalized' };
  }
  const out: CheckedEntry = { ok: true, seq, ts: e.ts, prev: e.prev, kind: e.kind, hash, sigOk: verifyEntrySignature(e, key) };
  if (e.kind === 'epoch') out.epoch = { first: e.first, last: e.last, size: e.size, root: e.root };
  return out;
}
