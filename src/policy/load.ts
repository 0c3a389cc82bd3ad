// Loading a policy file: bytes to a checked policy set. Guards against a rule that silently
// never applies or reads differently from what it does: bidirectional controls anywhere,
// Cedar's parse errors, empty or duplicate @id, `Tool::"…"` literals naming an undeclared
// tool, and Cedar's strict validator (warnings included) against the schema generated from the
// manifest. Every problem carries its line and column in the file.
import * as cedar from '@cedar-policy/cedar-wasm/nodejs';
import type { DetailedError, PolicyJson } from '@cedar-policy/cedar-wasm/nodejs';
import type { Manifest } from '../contract/manifest-types.js';
import { digestBytes, type Digest } from '../core/digest.js';
import type { CedarSchemaJson } from './schema.js';
import { PolicyLoadError, type PolicyProblem } from './problems.js';
import { byteToCharOffset, excerpt, findEntityLiteral, lineColumn, splitPolicies, type PolicySource } from './source.js';

export interface PolicyInfo {
  id: string;
  effect: 'permit' | 'forbid';
  text: string;
  line: number;
  column: number;
}

/** One policy of the file: where it is, and Cedar's JSON form of it. */
export interface ParsedPolicyEntry extends PolicySource {
  json: PolicyJson;
}

/** A policy file that parsed and names only declared tools; not yet validated. */
export interface ParsedPolicySet {
  digest: Digest;
  /** The whole file, decoded. */
  text: string;
  /** Problem locations name this (the file's path). */
  source: string;
  policies: PolicyInfo[];
  byId: Map<string, ParsedPolicyEntry>;
  /** id → text, as Cedar takes a static policy set. */
  staticPolicies: Record<string, string>;
  /** Problems found in single policies; the set is refused once validation adds its own. */
  problems: PolicyProblem[];
}

const BIDI = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

/** A problem Cedar reported, located in the file (inside `base`, a policy of it, when given). */
export function problemAt(set: { text: string }, policyId: string | null, e: DetailedError, base: PolicySource | null): PolicyProblem {
  const p: PolicyProblem = { policyId, message: e.message, help: e.help ?? null };
  const loc = e.sourceLocations?.[0];
  if (loc) {
    const local = base ? base.text : set.text;
    const start = (base ? base.offset : 0) + byteToCharOffset(local, loc.start);
    const end = (base ? base.offset : 0) + byteToCharOffset(local, loc.end);
    Object.assign(p, lineColumn(set.text, start), { excerpt: excerpt(set.text, start, end) });
  } else if (base) {
    Object.assign(p, lineColumn(set.text, base.offset)); // at least the policy it is about
  }
  return p;
}

/** A problem about no policy's text (a schema problem): no location to give. */
const unlocated = (e: DetailedError): PolicyProblem => ({ policyId: null, message: e.message, help: e.help ?? null });

function decode(policy: string | Uint8Array, source: string): { bytes: Uint8Array; text: string } {
  if (typeof policy === 'string') return { bytes: Buffer.from(policy, 'utf8'), text: policy };
  try {
    return { bytes: policy, text: new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(policy) };
  } catch {
    throw new PolicyLoadError([{ policyId: null, message: 'policy file is not valid UTF-8', help: null }], source);
  }
}

/** Parse a policy file and check what Cedar's validator does not. Throws PolicyLoadError when
 *  the file as a whole does not parse; problems of single policies are returned with the set. */
export function parsePolicySet(manifest: Manifest, policy: string | Uint8Array, source: string): ParsedPolicySet {
  const { bytes, text } = decode(policy, source);
  const set = { text };

  // Bidirectional controls anywhere, comments included (Cedar flags them in strings and
  // identifiers only): they make a rule display differently from how it parses.
  const bidi = [...text.matchAll(BIDI)].map((m) => ({
    policyId: null,
    message: `bidirectional control character U+${m[0].codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')} in the policy file`,
    help: 'remove it: it can make a rule read differently from what it does',
    ...lineColumn(text, m.index!),
  }));
  if (bidi.length) throw new PolicyLoadError(bidi, source);

  const whole = cedar.checkParsePolicySet({ staticPolicies: text });
  if (whole.type === 'failure') throw new PolicyLoadError(whole.errors.map((e) => problemAt(set, null, e, null)), source);

  // One policy at a time: ids from @id annotations, effect, text.
  const problems: PolicyProblem[] = [];
  const policies: PolicyInfo[] = [];
  const byId = new Map<string, ParsedPolicyEntry>();
  splitPolicies(text).forEach((src, i) => {
    const j = cedar.policyToJson(src.text);
    if (j.type === 'failure') {
      problems.push(...j.errors.map((e) => problemAt(set, null, e, src)));
      return;
    }
    const id = j.json.annotations?.id ?? `policy${i}`;
    const { line, column } = lineColumn(text, src.offset);
    if (id === '') {
      problems.push({ policyId: null, message: '@id needs a non-empty value', help: 'write @id("name")', line, column, excerpt: excerpt(text, src.offset, src.offset + 3) });
      return;
    }
    if (byId.has(id)) {
      problems.push({ policyId: id, message: `duplicate policy id "${id}"`, help: 'each @id must be unique', line, column, excerpt: excerpt(text, src.offset, src.offset + 1) });
      return;
    }
    byId.set(id, { ...src, json: j.json });
    policies.push({ id, effect: j.json.effect, text: src.text, line, column });
  });
  problems.push(...undeclaredTools(manifest, text, byId));
  const staticPolicies = Object.fromEntries([...byId].map(([id, p]) => [id, p.text]));
  return { digest: digestBytes(bytes), text, source, policies, byId, staticPolicies, problems };
}

/** Entity literals naming a tool the manifest does not declare. Cedar's validator checks
 *  entity types, not entity ids, so this check is ours. */
function undeclaredTools(manifest: Manifest, text: string, byId: Map<string, ParsedPolicyEntry>): PolicyProblem[] {
  const problems: PolicyProblem[] = [];
  for (const [id, p] of byId) {
    for (const e of entityLiterals(p.json)) {
      if (e.type !== 'Tool' || Object.prototype.hasOwnProperty.call(manifest.tools, e.id)) continue;
      const loc = findEntityLiteral(p.text, 'Tool', e.id);
      const start = p.offset + (loc?.start ?? 0);
      problems.push({
        policyId: id,
        message: `for policy \`${id}\`, unknown tool \`Tool::${JSON.stringify(e.id)}\`: the manifest does not declare it`,
        help: `declared tools: ${Object.keys(manifest.tools).sort().join(', ') || '(none)'}`,
        ...lineColumn(text, start),
        excerpt: excerpt(text, start, p.offset + (loc?.end ?? 1)),
      });
    }
  }
  return problems;
}

/** Every entity literal in a policy's JSON form (scope and conditions). */
export function entityLiterals(node: unknown, found: { type: string; id: string }[] = []): { type: string; id: string }[] {
  if (Array.isArray(node)) {
    for (const n of node) entityLiterals(n, found);
    return found;
  }
  if (typeof node !== 'object' || node === null) return found;
  for (const [k, v] of Object.entries(node)) {
    if ((k === '__entity' || k === 'entity') && typeof v === 'object' && v !== null) {
      const e = v as { type?: unknown; id?: unknown; __entity?: { type: unknown; id: unknown } };
      const uid = e.__entity ?? e;
      if (typeof uid.type === 'string' && typeof uid.id === 'string') found.push({ type: uid.type, id: uid.id });
    }
    entityLiterals(v, found);
  }
  return found;
}

export interface Validation {
  problems: PolicyProblem[];
  /** Warnings not tied to a policy; they do not refuse loading (policy warnings do). */
  warnings: PolicyProblem[];
}

/** Cedar's validator, strict mode, against a schema. Validator warnings are problems too:
 *  "policy is impossible" is a rule that never applies (often a typo in a `has` test), and
 *  confusable characters are how a rule is made to read differently from what it does. */
export function validatePolicySet(set: ParsedPolicySet, schema: CedarSchemaJson, typedTask: boolean): Validation {
  const v = cedar.validate({ schema: schema as cedar.Schema, policies: { staticPolicies: set.staticPolicies }, validationSettings: { mode: 'strict' } });
  if (v.type === 'failure') return { problems: v.errors.map(unlocated), warnings: [] };
  const problems = [...v.validationErrors, ...v.validationWarnings].map((e) => {
    const p = problemAt(set, e.policyId, e.error, set.byId.get(e.policyId) ?? null);
    if (!typedTask && !p.help && p.message.includes('attribute `task.'))
      p.help = 'context.task is typed from the task context: give the task context file (--context)';
    return p;
  });
  return { problems, warnings: v.otherWarnings.map(unlocated) };
}

export function sortProblems(problems: PolicyProblem[]): PolicyProblem[] {
  return problems.sort((a, b) => (a.line ?? 0) - (b.line ?? 0) || (a.column ?? 0) - (b.column ?? 0));
}
