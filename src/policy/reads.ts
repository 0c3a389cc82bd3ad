// What a policy set can read of a request, found in Cedar's JSON form of its policies. The
// marshaller hands Cedar only that: a value no policy names cannot change a decision, so it
// need not be converted (nor fail to be), and less crosses into wasm on every call.
// Over-approximates on purpose: any use of `context` other than a plain attribute path
// (`context.args.x`, `context.task.y.z`, `context.args has x`) — a whole record compared, put
// in a set or a record literal — counts as reading all of it.
import { entityLiterals } from './load.js';

/** The top-level attributes read, or all of them. */
export type ReadSet = 'all' | ReadonlySet<string>;

export interface PolicyReads {
  /** Of `context.args`. */
  args: ReadSet;
  /** Of `context.task`. */
  task: ReadSet;
  /** Whether a condition names a tool literal (whose attributes it might read). */
  toolLiterals: boolean;
}

interface Collector {
  args: Set<string> | 'all';
  task: Set<string> | 'all';
  toolLiterals: boolean;
}

export function policyReads(policies: Iterable<{ json: { conditions?: unknown } }>): PolicyReads {
  const c: Collector = { args: new Set(), task: new Set(), toolLiterals: false };
  for (const p of policies) {
    walk(p.json.conditions, c);
    if (entityLiterals(p.json.conditions).some((e) => e.type === 'Tool')) c.toolLiterals = true;
  }
  return c;
}

/** `context.a.b…` as ['a', 'b', …] when `node` is an attribute path rooted at `context`. */
function contextPath(node: unknown): string[] | null {
  const path: string[] = [];
  let cur = node;
  for (;;) {
    if (!isObject(cur)) return null;
    if (cur.Var === 'context' && Object.keys(cur).length === 1) return path.reverse();
    const step = (cur['.'] ?? cur.has) as { left?: unknown; attr?: unknown } | undefined;
    if (Object.keys(cur).length !== 1 || !isObject(step)) return null;
    // `e has a.b.c` names a path: its first attribute is the one read at this level.
    const attr = Array.isArray(step.attr) ? step.attr : [step.attr];
    if (!attr.every((a) => typeof a === 'string')) return null;
    path.push(...(attr as string[]).reverse());
    cur = step.left;
  }
}

function note(c: Collector, path: string[]): void {
  const [record, attr] = path;
  if (record !== 'args' && record !== 'task') return; // session, calls, calls_all: always sent
  if (attr === undefined) c[record] = 'all';
  else if (c[record] !== 'all') (c[record] as Set<string>).add(attr);
}

function walk(node: unknown, c: Collector): void {
  if (Array.isArray(node)) {
    for (const n of node) walk(n, c);
    return;
  }
  if (!isObject(node)) return;
  const path = contextPath(node);
  if (path !== null) {
    if (path.length === 0) {
      c.args = 'all';
      c.task = 'all';
    } else note(c, path);
    return;
  }
  for (const v of Object.values(node)) walk(v, c);
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
