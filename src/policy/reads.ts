// What a policy set can read of a request, found in Cedar's JSON form of its policies. The
// marshaller hands Cedar only that: a value no policy names cannot change a decision, so it
// need not be converted (nor fail to be), and less crosses into wasm on every call (each value
// costs Cedar 2–4 µs to take in). Over-approximates on purpose: any use of `context` other than
// a plain attribute path (`context.args.x`, `context.task.y.z`, `context.args has x`) — a whole
// record compared, put in a set or a record literal — counts as reading all of it.
// A rate window (`context.calls.hour`) read only by comparisons with integer literals is read
// by the outcome of those comparisons alone: two counts that compare alike with every literal
// give the same decision (ADR 039), which is what lets the engine reuse an answer across counts.
import { entityLiterals } from './load.js';
import { WINDOWS } from './schema.js';

/** The top-level attributes read, or all of them. */
export type ReadSet = 'all' | ReadonlySet<string>;

export type Window = (typeof WINDOWS)[number];

/** How one rate window is read: not at all, only compared with these integer literals (sorted,
 *  distinct; none when only its presence is tested), or in any other way (its exact value). */
export type WindowRead = null | 'exact' | readonly number[];

export interface PolicyReads {
  /** The records of `context` named at all (present in the request even if none of their
   *  attributes is read), or all of them when `context` is used whole. */
  records: ReadSet;
  /** Of `context.args`. */
  args: ReadSet;
  /** Of `context.task`. */
  task: ReadSet;
  /** Of `context.session`. */
  session: ReadSet;
  /** Of `context.calls` and `context.calls_all`, per window. */
  calls: Record<Window, WindowRead>;
  callsAll: Record<Window, WindowRead>;
  /** Attribute names read of any entity (`resource.effect`, `Tool::"t".accepts`, `… has x`):
   *  the tool entity carries only these. */
  entityAttrs: ReadonlySet<string>;
  /** Whether a condition names a tool literal (whose attributes it might read). */
  toolLiterals: boolean;
}

type WindowState = undefined | 'exact' | Set<number>;

interface Collector {
  records: Set<string> | 'all';
  args: Set<string> | 'all';
  task: Set<string> | 'all';
  session: Set<string> | 'all';
  calls: Partial<Record<Window, WindowState>>;
  calls_all: Partial<Record<Window, WindowState>>;
  entityAttrs: Set<string>;
  toolLiterals: boolean;
}

const RECORDS = ['task', 'args', 'session', 'calls', 'calls_all'] as const;
type SetRecord = 'args' | 'task' | 'session';
const COMPARISONS = new Set(['==', '!=', '<', '<=', '>', '>=']);

/** Whether a policy's resource scope can hold for `tool`. Cedar tests the scope before the
 *  conditions, so a condition of a policy scoped to another tool is never evaluated and reads
 *  nothing of a call of this one. Tools have no parents: `resource in Tool::"a"` is `==`. Any
 *  scope not plainly naming another tool counts as possibly applying. */
export function scopeMayApply(json: { resource?: unknown }, tool: string): boolean {
  const r = json.resource;
  if (!isObject(r)) return true;
  const named = r.op === '==' || r.op === 'in' ? r.entity : r.op === 'is' && isObject(r.in) ? r.in.entity : undefined;
  if (!isObject(named)) return true;
  const uid = isObject(named.__entity) ? named.__entity : named;
  return !(uid.type === 'Tool' && typeof uid.id === 'string' && uid.id !== tool);
}

export function policyReads(policies: Iterable<{ json: { conditions?: unknown } }>): PolicyReads {
  const c: Collector = { records: new Set(), args: new Set(), task: new Set(), session: new Set(), calls: {}, calls_all: {}, entityAttrs: new Set(), toolLiterals: false };
  for (const p of policies) {
    walk(p.json.conditions, c);
    if (entityLiterals(p.json.conditions).some((e) => e.type === 'Tool')) c.toolLiterals = true;
  }
  const windows = (w: Collector['calls'], whole: boolean): Record<Window, WindowRead> => {
    const out = {} as Record<Window, WindowRead>;
    for (const k of WINDOWS) {
      const s = whole ? 'exact' : w[k];
      out[k] = s === undefined ? null : s === 'exact' ? 'exact' : [...s].sort((a, b) => a - b);
    }
    return out;
  };
  const all = c.records === 'all';
  return {
    records: c.records,
    args: all ? 'all' : c.args,
    task: all ? 'all' : c.task,
    session: all ? 'all' : c.session,
    calls: windows(c.calls, all),
    callsAll: windows(c.calls_all, all),
    entityAttrs: c.entityAttrs,
    toolLiterals: c.toolLiterals,
  };
}

/** `context.a.b…` as ['a', 'b', …] when `node` is an attribute path rooted at `context`;
 *  `presence` when its last step is a `has` test (the attribute's presence, not its value). */
function contextPath(node: unknown): { path: string[]; presence: boolean } | null {
  const path: string[] = [];
  let presence = false;
  let cur = node;
  for (let outer = true; ; outer = false) {
    if (!isObject(cur)) return null;
    if (cur.Var === 'context' && Object.keys(cur).length === 1) return { path: path.reverse(), presence };
    const step = (cur['.'] ?? cur.has) as { left?: unknown; attr?: unknown } | undefined;
    if (Object.keys(cur).length !== 1 || !isObject(step)) return null;
    if (outer && cur.has !== undefined) presence = true;
    // `e has a.b.c` names a path: its first attribute is the one read at this level.
    const attr = Array.isArray(step.attr) ? step.attr : [step.attr];
    if (!attr.every((a) => typeof a === 'string')) return null;
    path.push(...(attr as string[]).reverse());
    cur = step.left;
  }
}

function note(c: Collector, path: string[], presence: boolean, compared?: number): void {
  if (c.records === 'all') return;
  const [record, attr] = path;
  if (record === undefined) {
    c.records = 'all';
    return;
  }
  c.records.add(record); // named: the record is sent (a `has` test of it must see it)
  // `context has calls`: presence only. (`context has args` still counts as reading all of
  // args or task, as it always did: which values are converted decides `omitted` and whether a
  // task value Cedar cannot hold fails the call.)
  if (presence && attr === undefined && record !== 'args' && record !== 'task') return;
  if (record === 'calls' || record === 'calls_all') {
    const w = c[record];
    if (attr === undefined) {
      for (const k of WINDOWS) w[k] = 'exact'; // the record used whole
      return;
    }
    if (!(WINDOWS as readonly string[]).includes(attr)) return; // no such window: Cedar errors either way
    const k = attr as Window;
    const seen = w[k];
    if (seen === 'exact') return;
    if (path.length !== 2 || (compared === undefined && !presence)) {
      w[k] = 'exact'; // read as a value: in arithmetic, a set, a record, …
      return;
    }
    const literals = seen ?? new Set<number>();
    if (compared !== undefined) literals.add(compared);
    w[k] = literals;
    return;
  }
  if (!(RECORDS as readonly string[]).includes(record)) return; // not in the request: Cedar errors either way
  const r = record as SetRecord;
  if (attr === undefined) c[r] = 'all';
  else if (c[r] !== 'all') (c[r] as Set<string>).add(attr);
}

/** `{"Value": n}` with n a safe integer (Cedar Long), else undefined. */
function intLiteral(node: unknown): number | undefined {
  if (!isObject(node) || Object.keys(node).length !== 1) return undefined;
  const v = node.Value;
  return typeof v === 'number' && Number.isSafeInteger(v) ? v : undefined;
}

/** A comparison of a rate window with an integer literal: notes the literal, true if it was one. */
function windowComparison(node: Record<string, unknown>, c: Collector): boolean {
  const keys = Object.keys(node);
  if (keys.length !== 1 || !COMPARISONS.has(keys[0])) return false;
  const op = node[keys[0]];
  if (!isObject(op)) return false;
  for (const [side, other] of [
    [op.left, op.right],
    [op.right, op.left],
  ]) {
    const p = contextPath(side);
    const n = intLiteral(other);
    if (p && !p.presence && n !== undefined && p.path.length === 2 && (p.path[0] === 'calls' || p.path[0] === 'calls_all')) {
      note(c, p.path, false, n);
      return true;
    }
  }
  return false;
}

function walk(node: unknown, c: Collector): void {
  if (Array.isArray(node)) {
    for (const n of node) walk(n, c);
    return;
  }
  if (!isObject(node)) return;
  if (windowComparison(node, c)) return;
  const p = contextPath(node);
  if (p !== null) {
    note(c, p.path, p.presence);
    return;
  }
  const step = (node['.'] ?? node.has) as { attr?: unknown } | undefined;
  if (Object.keys(node).length === 1 && isObject(step)) {
    for (const a of Array.isArray(step.attr) ? step.attr : [step.attr]) if (typeof a === 'string') c.entityAttrs.add(a);
  }
  for (const v of Object.values(node)) walk(v, c);
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
