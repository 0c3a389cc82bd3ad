// The Cedar policy engine: the policy says what this agent may do now, in this task (product.md
// section 4). Composes the parts, each in its file: load.ts (parse and check the file),
// schema.ts (the schema generated from the manifest), reads.ts and marshal.ts (only what the
// policies read, as Cedar values), evaluate.ts (one Cedar evaluation, errors fail closed),
// answers.ts (an answer reused for the identical request, ADR 039).
// The policy set is validated and preparsed once; every evaluation reuses it.
import './v8-guard.js'; // before Cedar: see the file
import { readRegularFile } from '../util/regular-file.js';
import type { Manifest } from '../contract/manifest-types.js';
import type { JsonObject } from '../core/json.js';
import type { Digest } from '../core/digest.js';
import { ACTION_ID, argsRecordType, buildSchema, toolAttributes, type CedarSchemaJson, type CedarType } from './schema.js';
import { parsePolicySet, problemAt, sortProblems, validatePolicySet, type ParsedPolicySet, type PolicyInfo } from './load.js';
import { policyReads, scopeMayApply, type PolicyReads } from './reads.js';
import { marshalContext, type MarshalPlan, type PolicyRequest, type Windows } from './marshal.js';
import { authorize, preparse, type CedarEntity } from './evaluate.js';
import { AnswerCache } from './answers.js';
import { PolicyEvalError, PolicyLoadError, type PolicyProblem } from './problems.js';
import type { CedarValue } from './values.js';

export { formatProblem, PolicyEvalError, PolicyLoadError, type PolicyProblem } from './problems.js';
export type { PolicyInfo } from './load.js';
export type { PolicyRequest, Windows } from './marshal.js';

export interface PolicyDecision {
  allow: boolean;
  /** The policies that determined it: satisfied permits for an allow, satisfied forbids for a
   *  deny; empty for a deny because no permit matched. */
  policyIds: string[];
  /** Arguments a policy reads that Cedar cannot hold, left out of `context.args` (names only). */
  omitted: string[];
}

export interface PolicyExplanation {
  decision: 'allow' | 'deny' | 'fail_closed';
  policyIds: string[];
  policies: PolicyInfo[];
  summary: string;
  /** Arguments left out of `context.args` (Cedar cannot hold their values). */
  omitted: string[];
  /** For fail_closed: Cedar's messages (may quote values: an operator's view, never a log). */
  errors: string[];
}

export interface LoadOptions {
  /** The task object whose shape types `context.task` (the start-up task context). */
  task?: JsonObject;
  /** Name used in problem locations (the policy file's path). */
  source?: string;
}

type TaskRecord = { type: 'Record'; attributes: Record<string, CedarType> };

function taskTypeOf(schema: CedarSchemaJson): TaskRecord {
  return (schema[''].actions[ACTION_ID] as { appliesTo: { context: { attributes: { task: TaskRecord } } } }).appliesTo.context.attributes.task;
}

/** What a tool the manifest does not declare is counted for (evaluate refuses it anyway). */
const BOTH_COUNTS = Object.freeze({ calls: true, callsAll: true });

export class PolicyEngine {
  readonly digest: Digest;
  readonly policies: readonly PolicyInfo[];
  /** Warnings not tied to a policy; they do not refuse start-up (policy warnings do). */
  readonly warnings: readonly PolicyProblem[];
  private readonly info: Map<string, PolicyInfo>;
  /** What the policies of the set read (the arguments and task attributes converted). */
  private readonly setReads: PolicyReads;
  /** What the policies that can apply to each tool read of its calls (what is sent). */
  private readonly reads: Map<string, PolicyReads>;
  /** Per tool, the call counts those policies read (countsRead), worked out once. */
  private readonly counted: Map<string, Readonly<{ calls: boolean; callsAll: boolean }>>;
  private readonly argTypes: Record<string, CedarType>;
  /** The types task values convert to: the start-up task's shape, or a reloaded one adopted. */
  private taskTypes: Record<string, CedarType>;
  /** The entities a request carries, per tool, built once: each with the attributes policies
   *  read; none when they read no attribute. */
  private readonly entities: Map<string, CedarEntity[]>;
  /** This policy set's answers: a reload is a new engine, so a new cache. */
  readonly answers = new AnswerCache();

  private constructor(
    private readonly manifest: Manifest,
    private readonly set: ParsedPolicySet,
    readonly schema: CedarSchemaJson,
    warnings: PolicyProblem[],
    /** The id Cedar knows the preparsed set by (the benchmark asks Cedar with it directly). */
    readonly policySetId: string,
  ) {
    this.digest = set.digest;
    this.policies = set.policies;
    this.warnings = warnings;
    this.info = new Map(set.policies.map((p) => [p.id, p]));
    this.argTypes = argsRecordType(manifest).attributes;
    this.taskTypes = taskTypeOf(schema).attributes;
    // Per tool, only the policies whose scope can hold for it: what their conditions read is
    // what a call of that tool sends (scopeMayApply).
    const policies = [...set.byId.values()];
    this.setReads = policyReads(policies);
    this.reads = new Map(Object.keys(manifest.tools).map((tool) => [tool, policyReads(policies.filter((p) => scopeMayApply(p.json, tool)))]));
    const any = (w: Record<string, unknown>) => Object.values(w).some((x) => x !== null);
    this.counted = new Map([...this.reads].map(([tool, r]) => [tool, Object.freeze({ calls: any(r.calls), callsAll: any(r.callsAll) })]));
    // Entities cross into wasm as JSON on every call: the resource's only, or every tool's when
    // a condition names a tool literal whose attributes it might read; each with the attributes
    // a condition names; none when no condition names one (an entity without attributes or
    // parents answers `==`, `in`, `is` as its absence does).
    this.entities = new Map(
      [...this.reads].map(([tool, reads]) => {
        const entity = (name: string): CedarEntity => ({
          uid: { type: 'Tool', id: name },
          attrs: Object.fromEntries(Object.entries(toolAttributes(manifest, manifest.tools[name])).filter(([k]) => reads.entityAttrs.has(k))) as Record<string, CedarValue>,
          parents: [],
        });
        const own = entity(tool);
        return [tool, Object.keys(own.attrs).length === 0 ? [] : reads.toolLiterals ? Object.keys(manifest.tools).map(entity) : [own]];
      }),
    );
  }

  /** Parse, check, validate and preparse. Throws PolicyLoadError: the gate must not start. */
  static load(manifest: Manifest, policy: string | Uint8Array, opts: LoadOptions = {}): PolicyEngine {
    const set = parsePolicySet(manifest, policy, opts.source ?? 'policy');
    const schema = buildSchema(manifest, { task: opts.task });
    const v = validatePolicySet(set, schema, opts.task !== undefined);
    const problems = [...set.problems, ...v.problems];
    if (problems.length) throw new PolicyLoadError(sortProblems(problems), set.source);
    const pre = preparse(set.staticPolicies);
    if ('errors' in pre) throw new PolicyLoadError(pre.errors.map((e) => problemAt(set, null, e, null)), set.source);
    return new PolicyEngine(manifest, set, schema, v.warnings, pre.id);
  }

  private plan(r: PolicyReads): MarshalPlan {
    return {
      records: r.records,
      args: { reads: this.setReads.args, send: r.args, types: this.argTypes },
      task: { reads: this.setReads.task, send: r.task, types: this.taskTypes },
      session: r.session,
      calls: r.calls,
      callsAll: r.callsAll,
    };
  }

  /** Which call counts the policies that can apply to `tool` read (both for an undeclared tool,
   *  which evaluate refuses anyway): marshalContext sends only those. */
  countsRead(tool: string): { calls: boolean; callsAll: boolean } {
    return this.counted.get(tool) ?? BOTH_COUNTS;
  }

  /** Decide one request; throws PolicyEvalError for anything short of a decision. */
  evaluate(req: PolicyRequest): PolicyDecision {
    return this.decide(req, true);
  }

  /** evaluate, always asking Cedar (never an answer kept from an identical request). */
  evaluateFresh(req: PolicyRequest): PolicyDecision {
    return this.decide(req, false);
  }

  private decide(req: PolicyRequest, reuse: boolean): PolicyDecision {
    const declared = Object.prototype.hasOwnProperty.call(this.manifest.tools, req.tool);
    const reads = declared ? this.reads.get(req.tool) : undefined;
    const entities = declared ? this.entities.get(req.tool) : undefined;
    if (!reads || !entities) throw new PolicyEvalError('policy evaluation for a tool the manifest does not declare');
    const { context, omitted } = marshalContext(req, this.plan(reads));
    const ask = () => authorize(this.policySetId, { agent: req.agent, tool: req.tool, context, entities });
    // The key is all Cedar reads besides the policy set and the tool's entities (fixed per tool).
    const r = reuse ? this.answers.answer(JSON.stringify([req.agent, req.tool, context]), ask) : ask();
    return { allow: r.allow, policyIds: [...r.policyIds], omitted };
  }

  /** evaluate, for an operator: the deciding policies' texts, and Cedar's messages on failure. */
  explain(req: PolicyRequest): PolicyExplanation {
    try {
      const r = this.evaluate(req);
      const summary = r.allow
        ? `allowed by ${r.policyIds.join(', ')}`
        : r.policyIds.length
          ? `denied by ${r.policyIds.join(', ')}`
          : 'denied: no permit policy matched (Cedar denies by default)';
      return { decision: r.allow ? 'allow' : 'deny', policyIds: r.policyIds, policies: this.texts(r.policyIds), summary, omitted: r.omitted, errors: [] };
    } catch (e) {
      if (!(e instanceof PolicyEvalError)) throw e;
      return { decision: 'fail_closed', policyIds: e.policyIds, policies: this.texts(e.policyIds), summary: e.message, omitted: [], errors: e.cedarErrors };
    }
  }

  private texts(ids: string[]): PolicyInfo[] {
    return ids.map((id) => this.info.get(id)).filter((p): p is PolicyInfo => p !== undefined);
  }

  /** Validate the policy against a schema typed by another task's shape (a reloaded context). */
  checkTask(task: JsonObject): PolicyProblem[] {
    return validatePolicySet(this.set, buildSchema(this.manifest, { task }), true).problems;
  }

  /** checkTask, and when the policy validates, convert task values to that shape's types from
   *  now on (an attribute no policy reads may change type without failing every call). */
  adoptTask(task: JsonObject): PolicyProblem[] {
    const schema = buildSchema(this.manifest, { task });
    const problems = validatePolicySet(this.set, schema, true).problems;
    if (problems.length === 0) this.taskTypes = taskTypeOf(schema).attributes;
    return problems;
  }
}

/** Parse, check and preparse a Cedar policy. Throws PolicyLoadError: the gate must not start. */
export function loadPolicy(manifest: Manifest, policy: string | Uint8Array, opts: LoadOptions = {}): PolicyEngine {
  return PolicyEngine.load(manifest, policy, opts);
}

export function loadPolicyFile(manifest: Manifest, path: string, opts: LoadOptions = {}): PolicyEngine {
  let bytes: Uint8Array;
  try {
    bytes = readRegularFile(path);
  } catch (e) {
    throw new PolicyLoadError(
      [{ policyId: null, message: `cannot read policy file (${(e as NodeJS.ErrnoException).code ?? 'error'})`, help: null }],
      path,
    );
  }
  return loadPolicy(manifest, bytes, { source: path, ...opts });
}
