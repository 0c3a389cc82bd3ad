// The Cedar policy engine: the policy says what this agent may do now, in this task (product.md
// section 4). Guards against two failures of a security policy: a rule that silently never
// applies (every policy is validated against the schema generated from the manifest, and every
// `Tool::"…"` literal must name a declared tool, before the gate starts), and a rule that errors
// at run time and so is skipped by Cedar (any evaluation error throws: the gate refuses
// `fail_closed`). The policy set is parsed once and evaluated preparsed.
import './v8-guard.js'; // before Cedar: see the file
import { readFileSync } from 'node:fs';
import * as cedar from '@cedar-policy/cedar-wasm/nodejs';
import type { DetailedError, PolicyJson } from '@cedar-policy/cedar-wasm/nodejs';
import type { Manifest } from '../contract/manifest-types.js';
import type { JsonObject } from '../core/json.js';
import { digestBytes, type Digest } from '../core/digest.js';
import { ACTION_ID, WINDOWS, buildSchema, toolArgTypes, toolAttributes, type CedarSchemaJson, type CedarType } from './schema.js';
import { recordToCedar, toCedar, ValueConversionError, type CedarValue } from './values.js';
import { byteToCharOffset, excerpt, findEntityLiteral, lineColumn, splitPolicies } from './source.js';

/** One problem found loading a policy: Cedar's message and help, and where in the file. */
export interface PolicyProblem {
  policyId: string | null;
  message: string;
  help: string | null;
  line?: number;
  column?: number;
  /** The offending line with a caret under the span. */
  excerpt?: string;
}

export class PolicyLoadError extends Error {
  constructor(
    readonly problems: PolicyProblem[],
    readonly source: string,
  ) {
    super(problems.map((p) => formatProblem(p, source)).join('\n'));
  }
}

/** `file:line:col: message (help)`: the form an editor can jump to. */
export function formatProblem(p: PolicyProblem, source = 'policy'): string {
  const at = p.line !== undefined ? `${source}:${p.line}:${p.column}` : source;
  return `${at}: ${p.message}${p.help ? ` (${p.help})` : ''}`;
}

/** An evaluation that could not decide. `message` names policy ids only, never a value; the
 *  Cedar messages (which can quote values) are in `cedarErrors`, for `policy explain` only. */
export class PolicyEvalError extends Error {
  constructor(
    message: string,
    readonly policyIds: string[] = [],
    readonly cedarErrors: string[] = [],
  ) {
    super(message);
  }
}

export interface PolicyInfo {
  id: string;
  effect: 'permit' | 'forbid';
  text: string;
  line: number;
  column: number;
}

export interface Windows {
  minute: number;
  hour: number;
  day: number;
}

export interface PolicyRequest {
  agent: string;
  tool: string;
  args: JsonObject;
  task: JsonObject;
  sessionLabel: string;
  calls: Windows;
  callsAll: Windows;
}

export interface PolicyDecision {
  allow: boolean;
  /** The policies that determined it: satisfied permits for an allow, satisfied forbids for a
   *  deny; empty for a deny because no permit matched. */
  policyIds: string[];
  /** Always empty: an evaluation error throws PolicyEvalError instead. */
  errors: string[];
}

export interface PolicyExplanation {
  decision: 'allow' | 'deny' | 'fail_closed';
  policyIds: string[];
  policies: PolicyInfo[];
  summary: string;
  /** For fail_closed: Cedar's messages (may quote values: an operator's view, never a log). */
  errors: string[];
}

export interface PolicyEngine {
  readonly digest: Digest;
  readonly policies: readonly PolicyInfo[];
  readonly schema: CedarSchemaJson;
  /** Warnings not tied to a policy; they do not refuse start-up (policy warnings do). */
  readonly warnings: readonly PolicyProblem[];
  evaluate(req: PolicyRequest): PolicyDecision;
  explain(req: PolicyRequest): PolicyExplanation;
  /** Validate the policy against a schema typed by another task's shape (a reloaded context). */
  checkTask(task: JsonObject): PolicyProblem[];
  /** checkTask, and when the policy validates, convert task values to that shape's types from
   *  now on (an attribute no policy reads may change type without failing every call). */
  adoptTask(task: JsonObject): PolicyProblem[];
}

export interface LoadOptions {
  /** The task object whose shape types `context.task` (the start-up task context). */
  task?: JsonObject;
  /** Name used in problem locations (the policy file's path). */
  source?: string;
}

let preparsedCount = 0;

function cedarMessage(e: DetailedError): string {
  return e.message;
}

function walkEntities(node: unknown, found: { type: string; id: string }[]): void {
  if (Array.isArray(node)) {
    for (const n of node) walkEntities(n, found);
    return;
  }
  if (typeof node !== 'object' || node === null) return;
  for (const [k, v] of Object.entries(node)) {
    if ((k === '__entity' || k === 'entity') && typeof v === 'object' && v !== null) {
      const e = v as { type?: unknown; id?: unknown; __entity?: { type: unknown; id: unknown } };
      const uid = e.__entity ?? e;
      if (typeof uid.type === 'string' && typeof uid.id === 'string') found.push({ type: uid.type, id: uid.id });
    }
    walkEntities(v, found);
  }
}

export function loadPolicyFile(manifest: Manifest, path: string, opts: LoadOptions = {}): PolicyEngine {
  let bytes: Uint8Array;
  try {
    bytes = readFileSync(path);
  } catch (e) {
    throw new PolicyLoadError(
      [{ policyId: null, message: `cannot read policy file (${(e as NodeJS.ErrnoException).code ?? 'error'})`, help: null }],
      path,
    );
  }
  return loadPolicy(manifest, bytes, { source: path, ...opts });
}

/** Parse, check and preparse a Cedar policy file. Throws PolicyLoadError: the gate must not start. */
export function loadPolicy(manifest: Manifest, policy: string | Uint8Array, opts: LoadOptions = {}): PolicyEngine {
  const source = opts.source ?? 'policy';
  const bytes = typeof policy === 'string' ? Buffer.from(policy, 'utf8') : policy;
  const digest = digestBytes(bytes);
  let text: string;
  try {
    text = typeof policy === 'string' ? policy : new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(bytes);
  } catch {
    throw new PolicyLoadError([{ policyId: null, message: 'policy file is not valid UTF-8', help: null }], source);
  }

  const at = (policyId: string | null, e: DetailedError, base: { offset: number; text: string } | null): PolicyProblem => {
    const p: PolicyProblem = { policyId, message: cedarMessage(e), help: e.help ?? null };
    const loc = e.sourceLocations?.[0];
    if (loc) {
      const local = base ? base.text : text;
      const start = (base ? base.offset : 0) + byteToCharOffset(local, loc.start);
      const end = (base ? base.offset : 0) + byteToCharOffset(local, loc.end);
      Object.assign(p, lineColumn(text, start), { excerpt: excerpt(text, start, end) });
    } else if (base) {
      Object.assign(p, lineColumn(text, base.offset)); // at least the policy it is about
    }
    return p;
  };
  // Errors about no policy's text (a schema problem): no location to give.
  const unlocated = (e: DetailedError): PolicyProblem => ({ policyId: null, message: cedarMessage(e), help: e.help ?? null });

  // 0. Bidirectional controls anywhere, comments included (Cedar flags them in strings and
  //    identifiers only): they make a rule display differently from how it parses.
  const bidi = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
  const bidiProblems = [...text.matchAll(bidi)].map((m) => ({
    policyId: null,
    message: `bidirectional control character U+${m[0].codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')} in the policy file`,
    help: 'remove it: it can make a rule read differently from what it does',
    ...lineColumn(text, m.index!),
  }));
  if (bidiProblems.length) throw new PolicyLoadError(bidiProblems, source);

  // 1. The file as a whole: Cedar's parse errors, located in the file.
  const parsed = cedar.checkParsePolicySet({ staticPolicies: text });
  if (parsed.type === 'failure') throw new PolicyLoadError(parsed.errors.map((e) => at(null, e, null)), source);

  // 2. One policy at a time: ids from @id annotations, effect, text.
  const problems: PolicyProblem[] = [];
  const sources = splitPolicies(text);
  const policies: PolicyInfo[] = [];
  const byId = new Map<string, { offset: number; text: string; json: PolicyJson }>();
  sources.forEach((src, i) => {
    const j = cedar.policyToJson(src.text);
    if (j.type === 'failure') {
      problems.push(...j.errors.map((e) => at(null, e, src)));
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

  // 3. Entity literals naming a tool the manifest does not declare. Cedar's validator checks
  //    entity types, not entity ids, so this check is ours.
  for (const [id, p] of byId) {
    const found: { type: string; id: string }[] = [];
    walkEntities(p.json, found);
    for (const e of found) {
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

  // 4. Cedar's validator, strict mode, against the generated schema.
  const staticPolicies = Object.fromEntries([...byId].map(([id, p]) => [id, p.text]));
  const schema = buildSchema(manifest, { task: opts.task });
  const warnings: PolicyProblem[] = [];
  const validate = (s: CedarSchemaJson): PolicyProblem[] => {
    const v = cedar.validate({ schema: s as cedar.Schema, policies: { staticPolicies }, validationSettings: { mode: 'strict' } });
    if (v.type === 'failure') return v.errors.map(unlocated);
    warnings.length = 0;
    for (const w of v.otherWarnings) warnings.push(unlocated(w));
    // Validator warnings refuse loading too: "policy is impossible" is a rule that never
    // applies (often a typo in a `has` test), and bidi or confusable characters in a policy are
    // how a rule is made to read differently from what it does.
    const all = [...v.validationErrors, ...v.validationWarnings];
    return all.map((e) => {
      const p = at(e.policyId, e.error, byId.get(e.policyId) ?? null);
      if (!p.message.includes('attribute `task.')) return p;
      if (opts.task === undefined && !p.help) p.help = 'context.task is typed from the task context: give the task context file (--context)';
      return p;
    });
  };
  problems.push(...validate(schema));
  if (problems.length) {
    problems.sort((a, b) => (a.line ?? 0) - (b.line ?? 0) || (a.column ?? 0) - (b.column ?? 0));
    throw new PolicyLoadError(problems, source);
  }

  // 5. Preparse once; every evaluation reuses it.
  const psetId = `cloakpipe-policy-${++preparsedCount}`;
  const pre = cedar.preparsePolicySet(psetId, { staticPolicies });
  if (pre.type === 'failure') throw new PolicyLoadError(pre.errors.map((e) => at(null, e, null)), source);

  // The entities, built once: each declared tool with its attributes. A request carries only
  // its resource's entity (entities cross into wasm as JSON on every call), unless a policy's
  // conditions name a tool literal, whose attributes it might read. Agent has no attributes.
  const toolEntity = new Map(
    Object.entries(manifest.tools).map(([name, decl]) => [
      name,
      { uid: { type: 'Tool', id: name }, attrs: toolAttributes(manifest, decl) as Record<string, CedarValue>, parents: [] },
    ]),
  );
  const allTools = [...toolEntity.values()];
  // Value types for conversion: each tool's arguments as its rules say, the task as validated.
  const argTypes = new Map(Object.entries(manifest.tools).map(([name, decl]) => [name, toolArgTypes(decl)]));
  const taskTypeOf = (sc: CedarSchemaJson): CedarType =>
    (sc[''].actions[ACTION_ID] as { appliesTo: { context: { attributes: { task: CedarType } } } }).appliesTo.context.attributes.task;
  let taskType = taskTypeOf(schema);
  const needAllTools = [...byId.values()].some((p) => {
    const found: { type: string; id: string }[] = [];
    walkEntities(p.json.conditions, found);
    return found.some((e) => e.type === 'Tool');
  });
  const info = new Map(policies.map((p) => [p.id, p]));

  const windows = (w: Windows, where: string): Record<string, number> => {
    const out: Record<string, number> = {};
    for (const k of WINDOWS) {
      const n = w?.[k];
      if (!Number.isSafeInteger(n) || n < 0) throw new PolicyEvalError(`${where}.${k} must be a non-negative integer`);
      out[k] = n;
    }
    return out;
  };

  // Runs Cedar; returns its response, or throws PolicyEvalError for anything short of a decision.
  const run = (req: PolicyRequest) => {
    if (!Object.prototype.hasOwnProperty.call(manifest.tools, req.tool)) {
      throw new PolicyEvalError('policy evaluation for a tool the manifest does not declare');
    }
    if (typeof req.agent !== 'string' || typeof req.sessionLabel !== 'string') {
      throw new PolicyEvalError('policy request: agent and session label must be strings');
    }
    let context: Record<string, CedarValue>;
    try {
      context = {
        task: toCedar(req.task ?? {}, 'task', taskType) as Record<string, CedarValue>,
        args: argsToCedar(req.args ?? {}, argTypes.get(req.tool)),
        session: { label: req.sessionLabel },
        calls: windows(req.calls, 'calls'),
        calls_all: windows(req.callsAll, 'calls_all'),
      };
    } catch (e) {
      if (e instanceof ValueConversionError || e instanceof PolicyEvalError) throw new PolicyEvalError(`policy context: ${e.message}`);
      throw e;
    }
    let answer: cedar.AuthorizationAnswer;
    try {
      answer = cedar.statefulIsAuthorized({
        principal: { type: 'Agent', id: req.agent },
        action: { type: 'Action', id: ACTION_ID },
        resource: { type: 'Tool', id: req.tool },
        context: context as cedar.Context,
        preparsedPolicySetId: psetId,
        entities: needAllTools ? allTools : [toolEntity.get(req.tool)!],
      });
    } catch {
      throw new PolicyEvalError('policy evaluation failed inside Cedar');
    }
    if (answer.type === 'failure') {
      throw new PolicyEvalError('policy evaluation failed: Cedar could not read the request', [], answer.errors.map(cedarMessage));
    }
    const { decision, diagnostics } = answer.response;
    if (diagnostics.errors.length) {
      const ids = [...new Set(diagnostics.errors.map((e) => e.policyId))].sort();
      throw new PolicyEvalError(
        `policy evaluation error in ${ids.map((i) => JSON.stringify(i)).join(', ')}`,
        ids,
        diagnostics.errors.map((e) => `${e.policyId}: ${cedarMessage(e.error)}`),
      );
    }
    return { allow: decision === 'allow', policyIds: [...diagnostics.reason].sort() };
  };

  return {
    digest,
    policies,
    schema,
    warnings,
    evaluate(req) {
      const r = run(req);
      return { ...r, errors: [] };
    },
    explain(req) {
      try {
        const r = run(req);
        const ps = r.policyIds.map((id) => info.get(id)!).filter(Boolean);
        const summary = r.allow
          ? `allowed by ${r.policyIds.join(', ')}`
          : r.policyIds.length
            ? `denied by ${r.policyIds.join(', ')}`
            : 'denied: no permit policy matched (Cedar denies by default)';
        return { decision: r.allow ? 'allow' : 'deny', policyIds: r.policyIds, policies: ps, summary, errors: [] };
      } catch (e) {
        if (!(e instanceof PolicyEvalError)) throw e;
        return {
          decision: 'fail_closed',
          policyIds: e.policyIds,
          policies: e.policyIds.map((id) => info.get(id)!).filter(Boolean),
          summary: e.message,
          errors: e.cedarErrors,
        };
      }
    },
    checkTask(task) {
      const saved = [...warnings];
      const out = validate(buildSchema(manifest, { task }));
      warnings.splice(0, warnings.length, ...saved);
      return out;
    },
    adoptTask(task) {
      const saved = [...warnings];
      const s = buildSchema(manifest, { task });
      const out = validate(s);
      warnings.splice(0, warnings.length, ...saved);
      if (out.length === 0) taskType = taskTypeOf(s);
      return out;
    },
  };
}

/** The arguments as Cedar values. A refusal names the top-level argument (declared: the manifest
 *  check comes first) and why, never a nested key: inside an `object` argument the keys are the
 *  caller's text, and the refusal's detail reaches logs and the host. */
function argsToCedar(args: JsonObject, types: Record<string, CedarType> | undefined): Record<string, CedarValue> {
  const out: Record<string, CedarValue> = {};
  for (const key of Object.keys(args)) {
    try {
      Object.assign(out, recordToCedar({ [key]: args[key] }, 'args', types));
    } catch (e) {
      if (!(e instanceof ValueConversionError)) throw e;
      throw new ValueConversionError(`args.${key}: ${e.reason}`, e.reason);
    }
  }
  return out;
}
