// Evidence files imported into the scope report (`--evidence FILE`). Two shapes are accepted:
//  - the scope evidence format, versioned: {"format": "cloakpipe-scope-evidence", "version": 1,
//    "producer": "...", "records": [receipt | confinement | mediation ...]} (docs/scope.md);
//  - the confinement suite's own evidence file (test/confine/docker.test.ts: {kernel, docker,
//    api, image, cases: [...]}), read by a tolerant adapter into confinement records.
// Guards against evidence that claims more than it carries: the scope format is strict (unknown
// keys, bad digests, unknown types are errors: exit 2), and the adapter takes from the suite's
// file only the counts it can name, saying which it could not. Nothing here ever holds a canary
// or a payload: records carry digests and counts only.
import { readBoundedFile } from '../util/regular-file.js';
import { basename } from 'node:path';
import { PROTECTIONS, type Protection } from '../contract/effects.js';
import { digestBytes, isDigest } from '../core/digest.js';

export class EvidenceError extends Error {}

export const SCOPE_EVIDENCE_FORMAT = 'cloakpipe-scope-evidence';
export const CONFINE_EVIDENCE_FORMAT = 'cloakpipe-confine-evidence';

/** A tool's own (or its system of record's) receipt that an execution happened, by digest. */
export interface ReceiptRecord {
  type: 'receipt';
  tool: string;
  effect?: string;
  operation?: string; // digest of the operation id, as in the ledger
  fingerprint?: string;
  result_digest?: string;
  observer: string;
  observed_at?: string;
  receipt_digest?: string;
}

/** What the confinement suite observed for one protection: baseline runs and mutation runs. */
export interface ConfinementRecord {
  type: 'confinement';
  protection: Protection;
  /** Canary deliveries at the protection's observers with the protection in place. */
  baseline: { runs: number; count: number };
  /** The same with the protection removed (admission bypassed in the test only). */
  mutation: { runs: number; count: number; admission_refused: boolean | null } | null;
  observers: string[];
}

/** Someone's statement that a path is controlled by an external mediator; not checkable here. */
export interface MediationRecord {
  type: 'mediation';
  effect: string;
  path: string;
  attested_by: string;
  basis: string;
}

export type EvidenceRecord = ReceiptRecord | ConfinementRecord | MediationRecord;

export interface EvidenceFile {
  name: string; // basename only: paths stay out of reports
  digest: string; // sha256 of the file's bytes
  shape: 'scope-v1' | 'confinement-suite';
  producer: string;
  records: EvidenceRecord[];
  /** What the adapter could not use, said plainly. */
  notes: string[];
}

function isPlain(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
const text = (v: unknown) => typeof v === 'string' && v.trim().length > 0 && v.length <= 1000;
const count = (v: unknown) => Number.isSafeInteger(v) && (v as number) >= 0;

/** Evidence files are records of digests and counts: this is far more than any holds. */
const MAX_EVIDENCE_BYTES = 64 * 1024 * 1024;

export function loadEvidence(path: string): EvidenceFile {
  let bytes: Buffer;
  // A regular file, opened without waiting, read to a bound: read by name, a FIFO with no writer
  // held the report forever and a link to /dev/zero was read without end.
  try {
    const read = readBoundedFile(path, MAX_EVIDENCE_BYTES, { followLinks: true });
    if (!read) throw new EvidenceError(`evidence file ${path} is larger than ${MAX_EVIDENCE_BYTES / 1024 / 1024} MiB`);
    bytes = read.bytes;
  } catch (e) {
    if (e instanceof EvidenceError) throw e;
    throw new EvidenceError(`cannot read evidence file ${path}: ${(e as NodeJS.ErrnoException).code ?? 'error'}`);
  }
  let doc: unknown;
  try {
    doc = JSON.parse(bytes.toString('utf8'));
  } catch {
    throw new EvidenceError(`evidence file ${basename(path)} is not JSON`);
  }
  return parseEvidence(doc, basename(path), digestBytes(bytes));
}

export function parseEvidence(doc: unknown, name: string, digest: string): EvidenceFile {
  if (!isPlain(doc)) throw new EvidenceError(`evidence ${name}: must be a JSON object`);
  if (doc.format === SCOPE_EVIDENCE_FORMAT) return scopeV1(doc, name, digest);
  if (doc.format === CONFINE_EVIDENCE_FORMAT || (doc.format === undefined && Array.isArray(doc.cases))) return confinementSuite(doc, name, digest);
  throw new EvidenceError(`evidence ${name}: unknown format (expected "${SCOPE_EVIDENCE_FORMAT}" or a confinement suite evidence file)`);
}

// ---------------------------------------------------------------------------------------------
// The scope evidence format, version 1: strict.

/** Required and optional keys of each record type (docs/scope.md carries the same as a JSON Schema). */
export const RECORD_KEYS: Record<EvidenceRecord['type'], [string[], string[]]> = {
  receipt: [['type', 'tool', 'observer'], ['effect', 'operation', 'fingerprint', 'result_digest', 'observed_at', 'receipt_digest']],
  confinement: [['type', 'protection', 'baseline'], ['mutation', 'observers']],
  mediation: [['type', 'effect', 'path', 'attested_by', 'basis'], []],
};

function scopeV1(doc: Record<string, unknown>, name: string, digest: string): EvidenceFile {
  const bad = (where: string, msg: string): never => {
    throw new EvidenceError(`evidence ${name} ${where}: ${msg}`);
  };
  for (const k of Object.keys(doc)) if (!['format', 'version', 'producer', 'records'].includes(k)) bad('document', `unknown key "${k}"`);
  if (doc.version !== 1) bad('version', 'must be 1');
  if (!text(doc.producer)) bad('producer', 'must say who produced the file');
  if (!Array.isArray(doc.records)) bad('records', 'must be a list');
  const records = (doc.records as unknown[]).map((r, i): EvidenceRecord => {
    const where = `records[${i}]`;
    if (!isPlain(r)) return bad(where, 'must be an object');
    const shape = RECORD_KEYS[r.type as EvidenceRecord['type']];
    if (!shape) return bad(`${where}.type`, 'must be receipt, confinement or mediation');
    const [req, opt] = shape;
    for (const k of Object.keys(r)) if (!req.includes(k) && !opt.includes(k)) bad(where, `unknown key "${k}"`);
    for (const k of req) if (r[k] === undefined) bad(where, `missing "${k}"`);
    if (r.type === 'receipt') {
      for (const k of ['tool', 'observer', 'effect', 'observed_at']) if (r[k] !== undefined && !text(r[k])) bad(`${where}.${k}`, 'must be a non-empty string');
      for (const k of ['operation', 'fingerprint', 'result_digest', 'receipt_digest'])
        if (r[k] !== undefined && !isDigest(r[k])) bad(`${where}.${k}`, 'must be a sha256:<64 hex> digest');
      if (r.operation === undefined && r.fingerprint === undefined) bad(where, 'a receipt names the operation or the fingerprint it attests');
      return r as unknown as ReceiptRecord;
    }
    if (r.type === 'mediation') {
      for (const k of req.slice(1)) if (!text(r[k])) bad(`${where}.${k}`, 'must be a non-empty string');
      return r as unknown as MediationRecord;
    }
    if (!PROTECTIONS.includes(r.protection as Protection)) bad(`${where}.protection`, `must be one of ${PROTECTIONS.join(', ')}`);
    const runCounts = (v: unknown, w: string, extra: string[]) => {
      if (!isPlain(v)) return bad(w, 'must be an object');
      for (const k of Object.keys(v)) if (!['runs', 'count', ...extra].includes(k)) bad(w, `unknown key "${k}"`);
      if (!count(v.runs) || (v.runs as number) < 1) bad(`${w}.runs`, 'must be a positive integer');
      if (!count(v.count)) bad(`${w}.count`, 'must be a non-negative integer');
      return v;
    };
    const baseline = runCounts(r.baseline, `${where}.baseline`, []);
    let mutation: ConfinementRecord['mutation'] = null;
    if (r.mutation !== undefined) {
      const m = runCounts(r.mutation, `${where}.mutation`, ['admission_refused']);
      if (m.admission_refused !== undefined && typeof m.admission_refused !== 'boolean') bad(`${where}.mutation.admission_refused`, 'must be a boolean');
      mutation = { runs: m.runs as number, count: m.count as number, admission_refused: (m.admission_refused as boolean | undefined) ?? null };
    }
    if (r.observers !== undefined && (!Array.isArray(r.observers) || !r.observers.every(text))) bad(`${where}.observers`, 'must be a list of names');
    return {
      type: 'confinement',
      protection: r.protection as Protection,
      baseline: { runs: baseline.runs as number, count: baseline.count as number },
      mutation,
      observers: (r.observers as string[] | undefined) ?? [],
    };
  });
  return { name, digest, shape: 'scope-v1', producer: doc.producer as string, records, notes: [] };
}

// ---------------------------------------------------------------------------------------------
// The confinement suite's evidence file: tolerant. Each case is read for the counts it carries;
// anything it does not carry is left out and said so, never guessed.

/** The suite's mutation names (test/confine/docker.test.ts) → protections. */
const MUTATION_NAMES: Record<string, Protection> = {
  network: 'network',
  'read-only root': 'read_only_root',
  read_only_root: 'read_only_root',
  'log driver': 'log_driver',
  log_driver: 'log_driver',
  ceiling: 'sink_ceiling',
  sink_ceiling: 'sink_ceiling',
};

const OBSERVERS: Record<Protection, string> = {
  network: 'tcp listeners (v4, v6, bridge) and dns',
  read_only_root: 'export path (docker cp)',
  log_driver: 'container logs',
  sink_ceiling: 'upstream record of the denied sink',
};

const obsCount = (v: unknown): number | null => (isPlain(v) && count(v.count) ? (v.count as number) : null);

/** The count a case carries at one protection's observers, or null when it does not carry it. */
function observed(c: Record<string, unknown>, p: Protection, denied: string[] | null): number | null {
  const explicit = isPlain(c.observers) ? obsCount(c.observers[p]) : null; // a future, explicit shape
  if (explicit !== null) return explicit;
  switch (p) {
    case 'network': {
      if (!isPlain(c.tcp)) return null;
      const parts = [...Object.values(c.tcp).map(obsCount), obsCount(c.dns)];
      return parts.some((x) => x === null) ? null : (parts as number[]).reduce((a, b) => a + b, 0);
    }
    case 'read_only_root':
      return obsCount(c.export);
    case 'log_driver':
      return obsCount(c.logs);
    case 'sink_ceiling': {
      const d = obsCount(c.denied_sink);
      if (d !== null) return d;
      if (!denied || !isPlain(c.record)) return null;
      const rec = c.record;
      return denied.reduce((a, t) => a + (count(rec[t]) ? (rec[t] as number) : 0), 0);
    }
  }
}

function confinementSuite(doc: Record<string, unknown>, name: string, digest: string): EvidenceFile {
  if (!Array.isArray(doc.cases)) throw new EvidenceError(`evidence ${name}: a confinement evidence file needs a "cases" list`);
  const notes: string[] = [];
  const sinks = isPlain(doc.sinks) && Array.isArray(doc.sinks.denied) && doc.sinks.denied.every(text) ? (doc.sinks.denied as string[]) : null;
  const acc = new Map<Protection, { bRuns: number; bCount: number; bMissing: number; mRuns: number; mCount: number; admission: boolean | null }>();
  const slot = (p: Protection) => {
    let s = acc.get(p);
    if (!s) acc.set(p, (s = { bRuns: 0, bCount: 0, bMissing: 0, mRuns: 0, mCount: 0, admission: null }));
    return s;
  };
  let unused = 0;
  for (const c of doc.cases) {
    if (!isPlain(c) || typeof c.name !== 'string') {
      unused++;
      continue;
    }
    const n = c.name;
    const mut = /^mutation-(.+)-(bypassed|admission)$/.exec(n);
    if (/^baseline(-\d+)?$/.test(n)) {
      for (const p of PROTECTIONS) {
        const v = observed(c, p, sinks);
        const s = slot(p);
        if (v === null) s.bMissing++;
        else {
          s.bRuns++;
          s.bCount += v;
        }
      }
    } else if (mut && MUTATION_NAMES[mut[1]]) {
      const p = MUTATION_NAMES[mut[1]];
      const s = slot(p);
      if (mut[2] === 'admission') {
        const ended = isPlain(c.summary) ? c.summary.ended : undefined;
        if (typeof ended === 'string') s.admission = (s.admission ?? true) && ended === 'refused';
      } else {
        const v = observed(c, p, sinks);
        if (v === null) notes.push(`case ${n}: no count at the ${p} observers`);
        else {
          s.mRuns++;
          s.mCount += v;
        }
      }
    } else unused++;
  }
  const records: ConfinementRecord[] = [];
  for (const p of PROTECTIONS) {
    const s = acc.get(p);
    if (!s || s.bRuns === 0) {
      if (s && s.bMissing)
        notes.push(
          p === 'sink_ceiling'
            ? 'sink_ceiling: the file does not say which tool is the denied sink (no "denied_sink" count, no "sinks.denied"): not used'
            : `${p}: baseline cases carry no count at its observers: not used`,
        );
      continue;
    }
    if (s.bMissing) notes.push(`${p}: ${s.bMissing} baseline case(s) without a count at its observers`);
    records.push({
      type: 'confinement',
      protection: p,
      baseline: { runs: s.bRuns, count: s.bCount },
      mutation: s.mRuns ? { runs: s.mRuns, count: s.mCount, admission_refused: s.admission } : null,
      observers: [OBSERVERS[p]],
    });
  }
  if (unused) notes.push(`${unused} case(s) are not observations of a route (failure cases, watchdog): not used`);
  const producer = `confinement suite${typeof doc.image === 'string' && doc.image ? ` (image ${doc.image.slice(0, 19)}…)` : ''}`;
  return { name, digest, shape: 'confinement-suite', producer, records, notes };
}
