// Argument rules of the manifest (product.md section 3). A rule failure names the argument and
// the rule, never the value.
import type { ArgumentRule } from './manifest-types.js';
import type { LoadedManifest } from './manifest.js';
import type { JsonValue } from '../core/json.js';
import { isJsonObject } from '../core/json.js';
import { contextPath, type TaskContext } from './context.js';
import { canonicalize } from '../core/canonical.js';

export type RuleFailure = { code: 'argument_invalid' | 'scope_mismatch'; detail: string };

function typeOk(type: ArgumentRule['type'], v: JsonValue): boolean {
  switch (type) {
    case undefined:
      return true;
    case 'string':
      return typeof v === 'string';
    case 'integer':
      return typeof v === 'number' && Number.isSafeInteger(v);
    case 'number':
      return typeof v === 'number';
    case 'boolean':
      return typeof v === 'boolean';
    case 'array':
      return Array.isArray(v);
    case 'object':
      return isJsonObject(v);
  }
}

const codePoints = (s: string) => {
  let n = 0;
  for (const _ of s) n++;
  return n;
};

const sameJson = (a: unknown, b: unknown) => canonicalize(a) === canonicalize(b);

/** Check one value against its rule; `where` names the argument (e.g. `to`, `recipients[2]`). */
export function checkRule(
  rule: ArgumentRule,
  value: JsonValue,
  where: string,
  m: LoadedManifest,
  ctx: TaskContext,
): RuleFailure | null {
  const bad = (what: string): RuleFailure => ({ code: 'argument_invalid', detail: `argument "${where}" fails rule ${what}` });
  if (!typeOk(rule.type, value)) return bad(`type ${rule.type}`);
  if (rule.enum && !rule.enum.some((e) => sameJson(e, value))) return bad('enum');
  if (typeof value === 'string') {
    if (rule.min_len !== undefined || rule.max_len !== undefined) {
      const n = codePoints(value);
      if (rule.min_len !== undefined && n < rule.min_len) return bad('min_len');
      if (rule.max_len !== undefined && n > rule.max_len) return bad('max_len');
    }
    const pattern = m.patterns.get(rule);
    if (pattern && !pattern.fullMatch(value)) return bad('pattern');
  } else if (rule.pattern !== undefined || rule.min_len !== undefined || rule.max_len !== undefined) {
    return bad('type string');
  }
  if (rule.minimum !== undefined || rule.maximum !== undefined) {
    if (typeof value !== 'number') return bad('type number');
    if (rule.minimum !== undefined && value < rule.minimum) return bad('minimum');
    if (rule.maximum !== undefined && value > rule.maximum) return bad('maximum');
  }
  if (rule.max_items !== undefined || rule.items !== undefined) {
    if (!Array.isArray(value)) return bad('type array');
    if (rule.max_items !== undefined && value.length > rule.max_items) return bad('max_items');
    if (rule.items) {
      for (let i = 0; i < value.length; i++) {
        const f = checkRule(rule.items, value[i], `${where}[${i}]`, m, ctx);
        if (f) return f;
      }
    }
  }
  if (rule.one_of_context !== undefined) {
    const allowed = contextPath(ctx, rule.one_of_context);
    const list = allowed === undefined ? [] : Array.isArray(allowed) ? allowed : [allowed];
    // Arrays bound to the context must have every element in scope.
    const values = Array.isArray(value) && rule.type === 'array' ? value : [value];
    for (const v of values)
      if (!list.some((a) => sameJson(a, v)))
        return { code: 'scope_mismatch', detail: `argument "${where}" is not among ${rule.one_of_context}` };
  }
  return null;
}
