// The four claims per protected effect (issue 9), path by path, from the ledger, the stored
// outcomes and imported evidence. A pure function: facts in, findings out.
// Guards against the report saying more than the evidence: each claim is ESTABLISHED only on a
// named piece of evidence; a canary probe is an analogue, never an effect; complete mediation is
// ESTABLISHED only when every declared path (deployment paths included) has mediation evidence
// AND someone assessed the path set complete. Declaring paths never establishes anything. An
// operator's attestation (a mediation record for an external control) is ATTESTED, never
// ESTABLISHED: cloakpipe cannot check it, and a claim resting on one says so in its status.
import type { CompletenessStatement, EffectDecl, EffectPath, Protection } from '../contract/effects.js';
import { describeMediator, describeRoute } from '../contract/effects.js';
import type { ConfinementRecord, EvidenceFile, MediationRecord, ReceiptRecord } from './evidence.js';
import type { DecisionFact, LedgerFacts, StoredOutcome } from './sources.js';

export type Status = 'established' | 'attested' | 'analogue_only' | 'not_established' | 'not_assessed';

/** The numbers a finding rests on (allowed, linked, unknown, …), for machines: the reasons say the same in words. */
export type Counts = Record<string, number>;

export interface Finding {
  status: Status;
  reasons: string[];
  counts?: Counts;
}

export interface PathReport {
  id: string;
  kind: EffectPath['kind'];
  route: string;
  mediator: string;
  authorization: Finding;
  correlation: Finding;
  observation: Finding;
  mediation: Finding;
}

export interface EffectReport {
  effect: string;
  description: string;
  claims: {
    authorization: Finding;
    correlation: Finding;
    observation: Finding;
    complete_mediation: Finding & { status: 'established' | 'attested' | 'not_established'; missing: string[]; attested: string[] };
  };
  completeness: CompletenessStatement | null;
  paths: PathReport[];
}

export interface ScopeInputs {
  effects: EffectDecl[];
  manifestDigest: string;
  ledger: LedgerFacts | null;
  /** Stored outcomes by operation digest; null when not available from the source. */
  outcomes: Map<string, StoredOutcome> | null;
  evidence: EvidenceFile[];
}

export const DECLARATION_IS_NOT_EVIDENCE =
  'Declaring a path set does not by itself establish completeness: a path nobody declared appears in no report.';

const f = (status: Status, ...reasons: string[]): Finding => ({ status, reasons });
const counted = (finding: Finding, counts: Counts): Finding => ({ ...finding, counts });
const plural = (n: number, one: string, many = one + 's') => `${n} ${n === 1 ? one : many}`;

// ---------------------------------------------------------------------------------------------
// Gate paths: the ledger.

interface Execution {
  d: DecisionFact;
  /** ok result entry linked by decision seq and fingerprint, and (for operations) a matching stored success. */
  correlated: boolean;
  why: 'correlated' | 'no_result' | 'error' | 'unknown' | 'no_stored_outcome' | 'stored_mismatch' | 'operator';
  result_digest: string | null;
}

interface GateStats {
  tool: string;
  decisions: DecisionFact[];
  allows: DecisionFact[]; // enforce-mode allow
  shadowAllows: number;
  replays: number;
  refusals: number;
  wouldRefuse: number;
  otherManifest: number;
  executions: Execution[];
  outcomesMissing: boolean;
}

function gateStats(tool: string, ledger: LedgerFacts, outcomes: Map<string, StoredOutcome> | null, manifestDigest: string): GateStats {
  const decisions = ledger.decisions.filter((d) => d.tool === tool);
  const shadow = (d: DecisionFact) => d.mode === 'shadow';
  const allows = decisions.filter((d) => d.outcome === 'allow' && !shadow(d));
  let outcomesMissing = false;
  const executions = allows.map((d): Execution => {
    const results = (ledger.results.get(d.seq) ?? []).filter((r) => r.fingerprint === d.fingerprint);
    const r = results[results.length - 1];
    const base = { d, result_digest: r?.result_digest ?? null };
    if (!r) return { ...base, correlated: false, why: 'no_result' };
    if (d.operation && ledger.reconciled.has(d.operation)) return { ...base, correlated: false, why: 'operator' };
    if (r.outcome === 'unknown') return { ...base, correlated: false, why: 'unknown' };
    if (r.outcome !== 'ok') return { ...base, correlated: false, why: 'error' };
    if (!d.operation) return { ...base, correlated: true, why: 'correlated' };
    if (!outcomes) {
      outcomesMissing = true;
      return { ...base, correlated: false, why: 'no_stored_outcome' };
    }
    const o = outcomes.get(d.operation);
    if (!o) return { ...base, correlated: false, why: 'no_stored_outcome' };
    if (o.fingerprint !== d.fingerprint || o.state !== 'succeeded' || (r.result_digest !== null && o.result_digest !== r.result_digest))
      return { ...base, correlated: false, why: 'stored_mismatch' };
    return { ...base, correlated: true, why: 'correlated' };
  });
  return {
    tool,
    decisions,
    allows,
    shadowAllows: decisions.filter((d) => d.outcome === 'allow' && shadow(d)).length,
    replays: decisions.filter((d) => d.outcome === 'replay').length,
    refusals: decisions.filter((d) => d.outcome === 'refuse').length,
    wouldRefuse: decisions.filter((d) => d.outcome === 'would_refuse').length,
    otherManifest: decisions.filter((d) => d.manifest_digest !== manifestDigest).length,
    executions,
    outcomesMissing,
  };
}

/** What an empty ledger is, and what it cannot be told apart from (ADR 087). */
export const LEDGER_EMPTY = 'no gate has recorded in it yet; a ledger whose every entry was deleted reads the same';

function ledgerUnusable(ledger: LedgerFacts | null): Finding | null {
  if (!ledger) return f('not_assessed', 'no ledger given (--home)');
  if (ledger.broken)
    return f('not_established', `the ledger failed verification at entry ${ledger.broken.seq} (${ledger.broken.why}): nothing in it is used as evidence`);
  if (ledger.empty) return f('not_established', `the ledger holds no entry (${LEDGER_EMPTY}): nothing in it is evidence`);
  return null;
}

function gateAuthorization(s: GateStats): Finding {
  const extra: string[] = [];
  if (s.replays) extra.push(`${plural(s.replays, 'replay')} of stored results`);
  if (s.refusals) extra.push(`${plural(s.refusals, 'refusal')}`);
  const notes: string[] = [];
  if (s.otherManifest) notes.push(`${plural(s.otherManifest, 'decision')} of ${s.tool} were made under another manifest digest`);
  if (s.shadowAllows) notes.push(`${plural(s.shadowAllows, 'call')} allowed in shadow mode: recorded, not enforced, not counted`);
  if (s.wouldRefuse) notes.push(`${plural(s.wouldRefuse, 'call')} forwarded in shadow mode despite a refusal (would_refuse): executions without authorization`);
  const tail = extra.length ? ` (and ${extra.join(', ')})` : '';
  const counts = { allowed: s.allows.length, replays: s.replays, refusals: s.refusals, would_refuse: s.wouldRefuse, shadow_allowed: s.shadowAllows, other_manifest: s.otherManifest };
  if (s.allows.length) return counted(f('established', `${plural(s.allows.length, 'allow decision')} for tool ${s.tool} in enforce mode${tail}`, ...notes), counts);
  return counted(f('not_established', `no allow decision in enforce mode for tool ${s.tool}${tail}`, ...notes), counts);
}

const WHY: Record<Execution['why'], string> = {
  correlated: 'correlated',
  no_result: 'without a result entry (forwarded? unknown)',
  error: 'with an error result',
  unknown: 'with an unknown outcome',
  no_stored_outcome: 'without a stored outcome for their operation',
  stored_mismatch: 'whose stored outcome disagrees (fingerprint, state or result digest)',
  operator: 'settled by an operator, not observed by the gate',
};

function gateCorrelation(s: GateStats): Finding {
  const by = new Map<Execution['why'], number>();
  for (const e of s.executions) by.set(e.why, (by.get(e.why) ?? 0) + 1);
  const ok = by.get('correlated') ?? 0;
  const counts: Counts = { allowed: s.allows.length, linked: ok };
  for (const w of Object.keys(WHY) as Execution['why'][]) if (w !== 'correlated') counts[w] = by.get(w) ?? 0;
  if (!s.allows.length) return counted(f('not_established', `no allowed call of ${s.tool} to correlate`), counts);
  const rest = [...by].filter(([w]) => w !== 'correlated').map(([w, n]) => `${n} ${WHY[w]}`);
  const withOps = s.allows.filter((d) => d.operation).length;
  const link = withOps
    ? 'decision → result entry (seq, fingerprint) → stored outcome (operation digest, fingerprint, result digest)'
    : 'decision → result entry (seq, fingerprint)';
  const reasons = [`${ok} of ${plural(s.allows.length, 'allowed call')} of ${s.tool} linked ${link}`];
  if (rest.length) reasons.push(`not linked: ${rest.join('; ')}`);
  if (s.outcomesMissing) reasons.push('the operations database was not available: stored outcomes could not be checked');
  return counted(f(ok ? 'established' : 'not_established', ...reasons), counts);
}

function receiptMatches(r: ReceiptRecord, d: DecisionFact, resultDigest: string | null): boolean {
  if (r.operation !== undefined && r.operation !== d.operation) return false;
  if (r.fingerprint !== undefined && r.fingerprint !== d.fingerprint) return false;
  if (r.result_digest !== undefined && r.result_digest !== resultDigest) return false;
  return true;
}

function gateObservation(s: GateStats, receipts: ReceiptRecord[]): Finding {
  let matched = 0;
  let matchedCorrelated = 0;
  for (const r of receipts) {
    const hit = s.executions.find((e) => receiptMatches(r, e.d, e.result_digest));
    if (hit) {
      matched++;
      if (hit.correlated) matchedCorrelated++;
    }
  }
  const observers = [...new Set(receipts.map((r) => r.observer))].join(', ');
  const reasons = [`${matched} of ${plural(receipts.length, 'receipt')} for ${s.tool} (from ${observers}) match an allowed call by digest; ${matchedCorrelated} of them a correlated execution`];
  if (receipts.length > matched) reasons.push(`${plural(receipts.length - matched, 'receipt')} match no allowed call of ${s.tool}`);
  return counted(f(matched ? 'established' : 'not_established', ...reasons), { receipts: receipts.length, matched, matched_linked: matchedCorrelated });
}

function gateMediation(s: GateStats): Finding {
  const shadow = s.decisions.filter((d) => d.mode === 'shadow').length;
  const enforced = s.decisions.length - shadow;
  const counts = { decided_enforce: enforced, decided_shadow: shadow };
  if (!s.decisions.length) return counted(f('not_established', `no decision for tool ${s.tool} in the ledger: nothing shows calls on this route reach the gate`), counts);
  if (shadow)
    return counted(f('not_established', `the gate ran in shadow mode for ${plural(shadow, 'call')} of ${s.tool}: recorded, not enforced (${enforced} decided in enforce mode)`), counts);
  return counted(f('established', `the gate decided ${plural(enforced, 'call')} of ${s.tool} in enforce mode (verified ledger)`), counts);
}

// ---------------------------------------------------------------------------------------------
// Confinement paths: the evidence suite's counts.

function combineConfinement(records: ConfinementRecord[]) {
  const b = { runs: 0, count: 0 };
  let m: { runs: number; count: number; refused: boolean | null } | null = null;
  for (const r of records) {
    b.runs += r.baseline.runs;
    b.count += r.baseline.count;
    if (r.mutation) {
      m ??= { runs: 0, count: 0, refused: null };
      m.runs += r.mutation.runs;
      m.count += r.mutation.count;
      if (r.mutation.admission_refused !== null) m.refused = (m.refused ?? true) && r.mutation.admission_refused;
    }
  }
  return { b, m };
}

function confinementMediation(p: Protection, records: ConfinementRecord[]): Finding {
  if (!records.length) return f('not_assessed', `no confinement evidence for the ${p} protection`);
  const { b, m } = combineConfinement(records);
  const base = `baseline: ${plural(b.runs, 'run')}, the ${p} observers saw the canary ${plural(b.count, 'time')}`;
  if (b.count > 0) return f('not_established', `${base} with the protection in place: it did not hold`);
  if (!m) return f('not_established', base, `no run with ${p} removed: nothing shows the observers would have seen a delivery`);
  const mut = `with ${p} removed: ${plural(m.runs, 'run')}, seen ${plural(m.count, 'time')}`;
  if (m.count === 0) return f('not_established', base, `${mut}: the observers are not shown able to see this route`);
  if (m.refused === false) return f('not_established', base, mut, 'admission accepted the weakened configuration');
  const adm = m.refused ? '; admission refused the weakened configuration' : '; admission of the weakened configuration not recorded';
  return f(
    'established',
    `${base}; ${mut}${adm}`,
    'holds for an agent run under cloakpipe confine with this protection; says nothing of an agent run outside it',
  );
}

function confinementObservation(p: Protection, records: ConfinementRecord[], effect: string): Finding {
  if (!records.length) return f('not_assessed', `no confinement evidence for the ${p} protection`);
  const { b, m } = combineConfinement(records);
  return f(
    'analogue_only',
    `a synthetic canary probe is not ${effect}: the suite's observers (${[...new Set(records.flatMap((r) => r.observers))].join('; ')}) counted ${b.count} deliveries in ${plural(b.runs, 'baseline run')}${m ? ` and ${m.count} in ${plural(m.runs, 'run')} with ${p} removed` : ''}`,
  );
}

// ---------------------------------------------------------------------------------------------

function pathReport(e: EffectDecl, path: EffectPath, inp: ScopeInputs, stats: Map<string, GateStats>): PathReport {
  const receipts = inp.evidence.flatMap((x) => x.records).filter((r): r is ReceiptRecord => r.type === 'receipt' && (r.effect === undefined || r.effect === e.name));
  const confinement = inp.evidence.flatMap((x) => x.records).filter((r): r is ConfinementRecord => r.type === 'confinement');
  const attestations = inp.evidence.flatMap((x) => x.records).filter((r): r is MediationRecord => r.type === 'mediation' && r.effect === e.name && r.path === path.id);
  const out: PathReport = {
    id: path.id,
    kind: path.kind,
    route: describeRoute(path.route),
    mediator: describeMediator(path.mediator),
    authorization: f('not_assessed'),
    correlation: f('not_assessed'),
    observation: f('not_assessed'),
    mediation: f('not_assessed'),
  };
  const outsideGate = 'outside the gate: no decision records this route';
  const m = path.mediator;
  if (m.type === 'gate') {
    const tool = path.route.tool!;
    const unusable = ledgerUnusable(inp.ledger);
    if (unusable) {
      out.authorization = out.correlation = out.mediation = unusable;
      out.observation = unusable.status === 'not_established' ? unusable : f('not_assessed', 'receipts cannot be matched without the ledger');
      if (!inp.evidence.length && unusable.status === 'not_assessed') out.observation = f('not_assessed', 'no ledger and no evidence file given');
      return out;
    }
    let s = stats.get(tool);
    if (!s) stats.set(tool, (s = gateStats(tool, inp.ledger!, inp.outcomes, inp.manifestDigest)));
    out.authorization = gateAuthorization(s);
    out.correlation = gateCorrelation(s);
    out.mediation = gateMediation(s);
    const mine = receipts.filter((r) => r.tool === tool);
    out.observation = !inp.evidence.length
      ? f('not_assessed', 'no evidence file given (--evidence)')
      : mine.length
        ? gateObservation(s, mine)
        : f('not_assessed', `no receipt for ${tool} in the evidence files`);
    return out;
  }
  out.authorization = f('not_assessed', outsideGate);
  out.correlation = f('not_assessed', outsideGate);
  if (m.type === 'confinement') {
    const recs = confinement.filter((r) => r.protection === m.protection);
    out.mediation = confinementMediation(m.protection, recs);
    out.observation = confinementObservation(m.protection, recs, e.name);
  } else if (m.type === 'external') {
    out.mediation = attestations.length
      ? counted(f('attested', ...attestations.map((a) => `attested by ${a.attested_by} (${a.basis}): an attestation, not checked by cloakpipe`)), { attestations: attestations.length })
      : f('not_assessed', `no attestation for the external control (${m.control})`);
  } else {
    out.mediation = f(
      'not_established',
      'declared unmediated (mediator none)' +
        (path.kind === 'deployment' ? ': outside the agent’s domain, neither the gate nor confinement can control it' : ''),
    );
  }
  if (m.type !== 'confinement')
    out.observation = f('not_assessed', path.kind === 'deployment' ? 'outside the agent’s domain: no cloakpipe observer' : 'no observer covers this path');
  if (m.type !== 'external' && attestations.length)
    out.mediation.reasons.push(`${plural(attestations.length, 'attestation')} ignored: the declared mediator is not external`);
  return out;
}

/** Combine per-path findings of the gate paths into the effect's claim. */
function combine(paths: PathReport[], claim: 'authorization' | 'correlation' | 'observation', none: string): Finding {
  const relevant = paths.filter((p) => p[claim].status !== 'not_assessed');
  const why = (ps: PathReport[]) => ps.filter((p) => p[claim].reasons.length).map((p) => `path ${p.id}: ${p[claim].reasons.join('; ')}`);
  if (!relevant.length) {
    const gate = paths.filter((p) => p.route.startsWith('gate:'));
    const reasons = claim === 'observation' ? why(paths) : gate.length ? why(gate) : [];
    return f('not_assessed', ...(reasons.length ? reasons : [none]));
  }
  const reasons = why(relevant);
  const has = (s: Status) => relevant.some((p) => p[claim].status === s);
  const status: Status = has('established') ? 'established' : has('analogue_only') ? 'analogue_only' : 'not_established';
  if (status === 'analogue_only') reasons.push('only analogue evidence: nothing observed the effect itself');
  // Counts add up over the gate paths (one tool's numbers are counted once).
  const counts: Counts = {};
  const seen = new Set<string>();
  for (const p of relevant) {
    const c = p[claim].counts;
    if (!c || seen.has(p.route)) continue;
    seen.add(p.route);
    for (const [k, v] of Object.entries(c)) counts[k] = (counts[k] ?? 0) + v;
  }
  return seen.size ? counted(f(status, ...reasons), counts) : f(status, ...reasons);
}

function completeMediation(e: EffectDecl, paths: PathReport[]): EffectReport['claims']['complete_mediation'] {
  const missing: string[] = [];
  const attested: string[] = [];
  for (const p of paths)
    if (p.mediation.status === 'attested') attested.push(`path ${p.id} (${p.kind}, mediator ${p.mediator}): ${p.mediation.reasons.join('; ')}`);
    else if (p.mediation.status !== 'established')
      missing.push(`path ${p.id} (${p.kind}, mediator ${p.mediator}): mediation ${p.mediation.status.replace('_', ' ')}: ${p.mediation.reasons.join('; ') || 'no evidence'}`);
  if (!e.completeness)
    missing.push(`no completeness statement: nobody is recorded as having assessed that these ${plural(paths.length, 'path')} are all the paths able to produce ${e.name}`);
  const reasons: string[] = [];
  if (missing.length && e.completeness)
    reasons.push(`the path set has a completeness statement (assessed by ${e.completeness.assessed_by} on ${e.completeness.assessed_at}); a statement cannot stand in for a path's mediation evidence`);
  if (missing.length && paths.some((p) => p.observation.status === 'established'))
    reasons.push('an observed execution shows that one path produced the effect, not that no other path can');
  if (!missing.length) {
    const c = e.completeness!;
    reasons.push(
      attested.length
        ? `every declared path has mediation evidence or an operator's attestation (${plural(attested.length, 'path')} attested only: evidence cloakpipe cannot check, so the claim is ATTESTED, not ESTABLISHED); the path set was assessed complete by ${c.assessed_by} on ${c.assessed_at} (basis: ${c.basis.join('; ')})`
        : `every declared path has mediation evidence; the path set was assessed complete by ${c.assessed_by} on ${c.assessed_at} (basis: ${c.basis.join('; ')})`,
    );
    reasons.push('the completeness of the path set rests on that assessment, which cloakpipe cannot check');
  }
  reasons.push(DECLARATION_IS_NOT_EVIDENCE);
  const status = missing.length ? 'not_established' : attested.length ? 'attested' : 'established';
  const counts = { paths: paths.length, established: paths.filter((p) => p.mediation.status === 'established').length, attested: attested.length, missing: paths.length - attested.length - paths.filter((p) => p.mediation.status === 'established').length };
  return { status, reasons, missing, attested, counts };
}

export function assess(inp: ScopeInputs): EffectReport[] {
  const stats = new Map<string, GateStats>();
  return inp.effects.map((e) => {
    const paths = e.paths.map((p) => pathReport(e, p, inp, stats));
    const gateNone = 'no declared path goes through the gate';
    return {
      effect: e.name,
      description: e.description,
      claims: {
        authorization: combine(paths, 'authorization', gateNone),
        correlation: combine(paths, 'correlation', gateNone),
        observation: combine(paths, 'observation', 'no evidence covers any path'),
        complete_mediation: completeMediation(e, paths),
      },
      completeness: e.completeness ?? null,
      paths,
    };
  });
}
