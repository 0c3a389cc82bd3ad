// A policy request as Cedar's context record: only what the policy set reads (reads.ts), each
// value converted to the type the schema gives it (values.ts). A record no policy names is not
// sent; a rate window read only through comparisons with integer literals is sent as the
// smallest count that compares alike with each of them (ADR 039), so requests that must get
// the same answer are the same request.
// Arguments are the model's, and any JSON value may arrive: an argument Cedar cannot hold (more
// than four decimals, outside Cedar's range, a null inside an array, a key Cedar's JSON format
// reserves) is left out of `context.args`, where every attribute is optional, so a policy
// tests it with `has` and a permit-all policy permits whatever the values (product.md
// section 4, ADR 010). The task comes from the orchestrator's system of record and its
// attributes are required: one a policy reads that Cedar cannot hold is a fault of the task
// context, and the evaluation fails (`fail_closed`), naming the path.
import type { JsonObject } from '../core/json.js';
import { WINDOWS, type CedarType } from './schema.js';
import { recordToCedar, ValueConversionError, type CedarValue } from './values.js';
import type { ReadSet, Window, WindowRead } from './reads.js';
import { PolicyEvalError } from './problems.js';

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

/** What the marshaller needs to know of the policy set and its schema. */
export interface MarshalPlan {
  /** The records of `context` sent at all. */
  records: ReadSet;
  /** `reads`: converted (what any policy of the set reads: decides `omitted`, and whether a task
   *  value Cedar cannot hold fails the call); `send`: of those, sent (what the policies that can
   *  apply to this tool read). */
  args: { reads: ReadSet; send: ReadSet; types: Record<string, CedarType> };
  task: { reads: ReadSet; send: ReadSet; types: Record<string, CedarType> };
  session: ReadSet;
  calls: Record<Window, WindowRead>;
  callsAll: Record<Window, WindowRead>;
}

export interface CedarContext {
  context: Record<string, CedarValue>;
  /** Arguments a policy reads that Cedar cannot hold, left out (declared names, never values). */
  omitted: string[];
}

const has = (o: object, k: string) => Object.prototype.hasOwnProperty.call(o, k);
const read = (reads: ReadSet, key: string) => reads === 'all' || reads.has(key);

/** The arguments policies read, each as its schema type; those Cedar cannot hold are omitted. */
export function marshalArgs(args: JsonObject, plan: Pick<MarshalPlan['args'], 'reads' | 'types'>): CedarContext {
  const context: Record<string, CedarValue> = {};
  const omitted: string[] = [];
  for (const key of Object.keys(args)) {
    if (!read(plan.reads, key)) continue;
    // A name the schema leaves out (two tools type it differently, or no rule types it) is
    // one no policy can name; it is sent only when a policy reads `context.args` whole.
    const type = has(plan.types, key) ? plan.types[key] : undefined;
    if (!type && plan.reads !== 'all') continue;
    const value = args[key];
    try {
      if (value === null) throw new ValueConversionError('null', 'null has no Cedar value');
      context[key] = recordToCedar({ [key]: value }, 'args', type ? { [key]: type } : undefined)[key];
    } catch (e) {
      if (!(e instanceof ValueConversionError)) throw e;
      omitted.push(key);
    }
  }
  return { context, omitted };
}

/** The task attributes policies read, as typed at load; throws ValueConversionError by path. */
export function marshalTask(task: JsonObject, plan: Pick<MarshalPlan['task'], 'reads' | 'types'>): Record<string, CedarValue> {
  if (plan.reads === 'all') return recordToCedar(task, 'task', plan.types);
  const picked: JsonObject = {};
  for (const key of plan.reads) if (has(task, key)) picked[key] = task[key];
  return recordToCedar(picked, 'task', plan.types);
}

/** The smallest non-negative count that compares with every literal as `n` does (literals
 *  sorted ascending, `n` a non-negative integer): equal to a literal, it; else the first
 *  integer above the greatest literal below `n`, or 0 when that is negative or there is none. */
export function countClass(n: number, literals: readonly number[]): number {
  let below = -1;
  for (const lit of literals) {
    if (n === lit) return lit;
    if (n < lit) break;
    below = lit;
  }
  return Math.max(below + 1, 0);
}

function windows(w: Windows, where: string, reads: Record<Window, WindowRead>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const k of WINDOWS) {
    const n = w?.[k];
    // Checked whether read or not: a count the gate could not compute refuses, as before.
    if (!Number.isSafeInteger(n) || n < 0) throw new PolicyEvalError(`policy context: ${where}.${k} must be a non-negative integer`);
    const r = reads[k];
    if (r === null) continue;
    out[k] = r === 'exact' ? n : countClass(n, r);
  }
  return out;
}

function pick<T>(obj: Record<string, T>, reads: ReadSet): Record<string, T> {
  if (reads === 'all') return obj;
  const out: Record<string, T> = {};
  for (const k of reads) if (has(obj, k)) out[k] = obj[k];
  return out;
}

/** The context record; throws PolicyEvalError (→ fail_closed) naming a path, never a value. */
export function marshalContext(req: PolicyRequest, plan: MarshalPlan): CedarContext {
  if (typeof req.agent !== 'string' || typeof req.sessionLabel !== 'string') {
    throw new PolicyEvalError('policy request: agent and session label must be strings');
  }
  let task: Record<string, CedarValue>;
  try {
    task = marshalTask(req.task ?? {}, plan.task);
  } catch (e) {
    if (e instanceof ValueConversionError) throw new PolicyEvalError(`policy context: ${e.message}`);
    throw e;
  }
  const calls = windows(req.calls, 'calls', plan.calls);
  const callsAll = windows(req.callsAll, 'calls_all', plan.callsAll);
  const args = marshalArgs(req.args ?? {}, plan.args);
  const context: Record<string, CedarValue> = {};
  const sent = (r: string) => read(plan.records, r);
  if (sent('task')) context.task = plan.task.send === plan.task.reads ? task : pick(task, plan.task.send);
  if (sent('args')) context.args = plan.args.send === plan.args.reads ? args.context : pick(args.context, plan.args.send);
  if (sent('session')) context.session = pick({ label: req.sessionLabel }, plan.session);
  if (sent('calls')) context.calls = calls;
  if (sent('calls_all')) context.calls_all = callsAll;
  return { context, omitted: args.omitted };
}
