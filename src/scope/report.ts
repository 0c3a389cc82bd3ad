// The scope report as a document (JSON, versioned) and as text. Guards against a reader taking
// a status for more than it is: every status is printed with its reasons, NOT ESTABLISHED lists
// each missing piece, and the text never omits that a declared path set is not evidence.
// Paths of the machine (home, evidence locations) stay out: files appear by name and digest.
import type { LoadedManifest } from '../contract/manifest.js';
import { assess, DECLARATION_IS_NOT_EVIDENCE, LEDGER_EMPTY, type EffectReport, type Finding, type ScopeInputs, type Status } from './assess.js';
import type { EvidenceFile } from './evidence.js';
import type { LedgerFacts } from './sources.js';

export const REPORT_FORMAT = 'cloakpipe-scope-report';

export interface ScopeReport {
  format: typeof REPORT_FORMAT;
  version: 1;
  manifest: { release: string; digest: string };
  ledger: { source: string; entries: number; decisions: number; verified: boolean; empty: boolean; broken: { seq: number; why: string } | null; stored_outcomes: number | null } | null;
  evidence: { name: string; digest: string; shape: EvidenceFile['shape']; producer: string; records: Record<string, number>; notes: string[] }[];
  effects: EffectReport[];
  note: string;
}

export function buildReport(manifest: LoadedManifest, inp: Omit<ScopeInputs, 'manifestDigest'>): ScopeReport {
  const l: LedgerFacts | null = inp.ledger;
  return {
    format: REPORT_FORMAT,
    version: 1,
    manifest: { release: manifest.manifest.release, digest: manifest.digest },
    ledger: l && {
      source: l.describe,
      entries: l.entries,
      decisions: l.decisions.length,
      verified: l.broken === null && !l.empty,
      empty: l.empty,
      broken: l.broken,
      stored_outcomes: inp.outcomes ? inp.outcomes.size : null,
    },
    evidence: inp.evidence.map((e) => {
      const records: Record<string, number> = {};
      for (const r of e.records) records[r.type] = (records[r.type] ?? 0) + 1;
      return { name: e.name, digest: e.digest, shape: e.shape, producer: e.producer, records, notes: e.notes };
    }),
    effects: assess({ ...inp, manifestDigest: manifest.digest }),
    note: DECLARATION_IS_NOT_EVIDENCE,
  };
}

const LABEL: Record<Status, string> = {
  established: 'ESTABLISHED',
  attested: 'ATTESTED',
  analogue_only: 'ANALOGUE ONLY',
  not_established: 'NOT ESTABLISHED',
  not_assessed: 'NOT ASSESSED',
};
const small = (s: Status) => LABEL[s].toLowerCase();

function reasons(lines: string[], items: string[], indent: string) {
  for (const r of items) lines.push(`${indent}- ${r}`);
}

function claim(lines: string[], n: number, name: string, c: Finding & { missing?: string[]; attested?: string[] }) {
  lines.push(`  ${n}. ${name.padEnd(20)}${LABEL[c.status]}`);
  if (c.missing?.length) {
    lines.push('     missing:');
    reasons(lines, c.missing, '       ');
  }
  if (c.attested?.length) {
    lines.push('     attested only (not checked by cloakpipe):');
    reasons(lines, c.attested, '       ');
  }
  reasons(lines, c.reasons, '     ');
}

export function renderText(r: ScopeReport): string {
  const lines: string[] = [];
  lines.push(`cloakpipe scope report (${REPORT_FORMAT} v${r.version})`);
  lines.push(`manifest  ${r.manifest.release}  ${r.manifest.digest}`);
  if (!r.ledger) lines.push('ledger    none given (--home): authorization, correlation and gate mediation are not assessed');
  else
    lines.push(
      `ledger    ${r.ledger.source}: ${r.ledger.entries} entries, ${r.ledger.decisions} decisions, ` +
        (r.ledger.broken
          ? `FAILED verification at entry ${r.ledger.broken.seq} (${r.ledger.broken.why})`
          : r.ledger.empty
            ? `empty (${LEDGER_EMPTY}): nothing to verify`
            : 'chain and signatures verified') +
        (r.ledger.stored_outcomes === null ? '; no operations database' : `; ${r.ledger.stored_outcomes} stored operations`),
    );
  if (!r.evidence.length) lines.push('evidence  none given (--evidence)');
  for (const [i, e] of r.evidence.entries()) {
    const recs = Object.entries(e.records).map(([k, v]) => `${v} ${k} record${v === 1 ? '' : 's'}`).join(', ') || 'no records';
    lines.push(`${i ? '         ' : 'evidence '} ${e.name}: ${e.producer}; ${recs}; ${e.digest}`);
    for (const n of e.notes) lines.push(`            note: ${n}`);
  }
  for (const e of r.effects) {
    lines.push('');
    lines.push(`effect ${e.effect}: ${e.description}`);
    claim(lines, 1, 'authorization', e.claims.authorization);
    claim(lines, 2, 'correlation', e.claims.correlation);
    claim(lines, 3, 'observation', e.claims.observation);
    claim(lines, 4, 'complete mediation', e.claims.complete_mediation);
    lines.push('');
    lines.push('  path by path');
    for (const p of e.paths) {
      lines.push(`  ${p.id} (${p.kind}; ${p.route}; mediator ${p.mediator})`);
      for (const k of ['authorization', 'correlation', 'observation', 'mediation'] as const) {
        const c = p[k];
        lines.push(`     ${k.padEnd(14)} ${small(c.status).padEnd(17)}${c.reasons.length ? c.reasons[0] : ''}`);
        for (const more of c.reasons.slice(1)) lines.push(`     ${''.padEnd(14)} ${''.padEnd(17)}${more}`);
      }
    }
    lines.push(
      e.completeness
        ? `  completeness statement: assessed by ${e.completeness.assessed_by} on ${e.completeness.assessed_at}`
        : '  completeness statement: none',
    );
  }
  return lines.join('\n') + '\n';
}
