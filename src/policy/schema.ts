// The Cedar schema the gate validates a policy against, generated from the manifest (and the
// task context's shape). It guards against a policy that silently never applies: a typo in an
// attribute (`resource.effct`, `context.calls.hr`) or an action makes start-up fail with
// Cedar's own message instead of a forbid rule that quietly evaluates to nothing.
// Design and its limits: docs/decisions/005-cedar-schema.md.
import type { ArgumentRule, Manifest, ToolDecl } from '../contract/manifest-types.js';
import type { JsonObject, JsonValue } from '../core/json.js';

export const ACTION_ID = 'call_tool';
export const WINDOWS = ['minute', 'hour', 'day'] as const;

/** The subset of Cedar's JSON schema type language this project generates. */
export type CedarType =
  | { type: 'String' }
  | { type: 'Long' }
  | { type: 'Boolean' }
  | { type: 'Extension'; name: 'decimal' }
  | { type: 'Set'; element: CedarType }
  | { type: 'Record'; attributes: Record<string, CedarAttr> };
export type CedarAttr = CedarType & { required?: boolean };

/** Cedar's JSON schema format (one namespace, the empty one). */
export type CedarSchemaJson = Record<string, { entityTypes: Record<string, unknown>; actions: Record<string, unknown> }>;

const STRING: CedarType = { type: 'String' };
const LONG: CedarType = { type: 'Long' };
const BOOLEAN: CedarType = { type: 'Boolean' };
const DECIMAL: CedarType = { type: 'Extension', name: 'decimal' };

/** Keys Cedar's JSON value format reads as escapes (`__entity`, `__extn`, `__expr`, and any future
 *  `__…`). A task or argument object carrying one is never handed to Cedar. */
export function isReservedKey(key: string): boolean {
  return key.startsWith('__');
}

/** The Tool entity's attributes, with defaults: approval "none"; a tool that declares no ceiling
 *  accepts the lowest label, the ceiling the flow check enforces for it (ADR 003, ADR 063): a
 *  policy reads what the gate does; a tool that declares no result label returns the lowest
 *  (its results do not raise the session). */
export function toolAttributes(manifest: Manifest, decl: ToolDecl): { effect: string; approval: string; accepts: string; returns: string } {
  const labels = manifest.labels;
  return {
    effect: decl.effect,
    approval: decl.approval ?? 'none',
    accepts: decl.accepts ?? labels[0],
    returns: decl.returns ?? labels[0],
  };
}

/** The Cedar type an argument rule fixes, or undefined when the rule does not fix one. */
export function argType(rule: ArgumentRule): CedarType | undefined {
  switch (rule.type) {
    case 'string':
      return STRING;
    case 'integer':
      return LONG;
    case 'number':
      return DECIMAL;
    case 'boolean':
      return BOOLEAN;
    case 'array': {
      const el = rule.items ? argType(rule.items) : undefined;
      return el ? { type: 'Set', element: el } : undefined;
    }
    case 'object':
      // Its members are not declared by the manifest: present, but opaque to policies.
      return { type: 'Record', attributes: {} };
    default:
      return undefined;
  }
}

export function sameType(a: CedarType, b: CedarType): boolean {
  return JSON.stringify(normalize(a)) === JSON.stringify(normalize(b));
}

function normalize(t: CedarAttr): unknown {
  if (t.type === 'Set') return { type: 'Set', element: normalize(t.element) };
  if (t.type === 'Record') {
    const keys = Object.keys(t.attributes).sort();
    return { type: 'Record', attributes: keys.map((k) => [k, normalize(t.attributes[k]), t.attributes[k].required !== false]) };
  }
  return t.type === 'Extension' ? { type: t.type, name: t.name } : { type: t.type };
}

/** The declared types of one tool's arguments (those whose rule fixes a type). */
export function toolArgTypes(decl: ToolDecl): Record<string, CedarType> {
  const out: Record<string, CedarType> = {};
  for (const [name, rule] of Object.entries(decl.arguments ?? {})) {
    const t = argType(rule);
    if (t) out[name] = t;
  }
  return out;
}

/** `context.args`: every argument any tool declares, each optional (a policy must test
 *  `context.args has x` first, which Cedar's validator enforces). A name two tools declare with
 *  different types, or with no type, is left out: a policy cannot refer to it. */
export function argsRecordType(manifest: Manifest): { type: 'Record'; attributes: Record<string, CedarAttr>; omitted: string[] } {
  const attributes: Record<string, CedarAttr> = {};
  const omitted = new Set<string>();
  for (const decl of Object.values(manifest.tools)) {
    for (const [name, rule] of Object.entries(decl.arguments ?? {})) {
      if (omitted.has(name) || isReservedKey(name)) continue;
      const t = argType(rule);
      if (!t || (attributes[name] && !sameType(attributes[name], t))) {
        delete attributes[name];
        omitted.add(name);
        continue;
      }
      attributes[name] = { ...t, required: false };
    }
  }
  return { type: 'Record', attributes, omitted: [...omitted].sort() };
}

/** The Cedar type of a JSON value from the task context, by its kind; undefined when it has none
 *  (null, a set mixing types). Integers are Long, other numbers decimal, arrays sets (an empty
 *  one is taken as a set of strings), objects closed records whose present attributes are
 *  required. */
export function inferType(value: JsonValue): CedarType | undefined {
  if (value === null) return undefined;
  switch (typeof value) {
    case 'string':
      return STRING;
    case 'boolean':
      return BOOLEAN;
    case 'number':
      return Number.isInteger(value) ? LONG : DECIMAL;
    default:
      break;
  }
  if (Array.isArray(value)) {
    if (value.length === 0) return { type: 'Set', element: STRING };
    let el: CedarType | undefined;
    for (const v of value) {
      const t = inferType(v);
      if (!t) return undefined;
      if (el && !sameType(el, t)) return undefined;
      el = t;
    }
    return { type: 'Set', element: el! };
  }
  return inferRecord(value as JsonObject);
}

export function inferRecord(obj: JsonObject): { type: 'Record'; attributes: Record<string, CedarAttr> } {
  const attributes: Record<string, CedarAttr> = {};
  for (const [k, v] of Object.entries(obj)) {
    if (isReservedKey(k)) continue; // never reaches Cedar; the value converter refuses it
    const t = inferType(v);
    if (t) attributes[k] = t;
  }
  return { type: 'Record', attributes };
}

function windowsType(): CedarType {
  return { type: 'Record', attributes: Object.fromEntries(WINDOWS.map((w) => [w, LONG])) };
}

export interface SchemaOptions {
  /** A task object whose shape types `context.task` (the task context at start-up). Without one,
   *  `context.task` has no attributes a policy may read. */
  task?: JsonObject;
}

/** The schema: entity types `Agent` and `Tool` (attributes effect, approval, accepts, returns),
 *  action `call_tool` from Agent to Tool with context {task, args, session, calls, calls_all}. */
export function buildSchema(manifest: Manifest, opts: SchemaOptions = {}): CedarSchemaJson {
  const { omitted: _omitted, ...args } = argsRecordType(manifest);
  return {
    '': {
      entityTypes: {
        Agent: {},
        Tool: {
          shape: {
            type: 'Record',
            attributes: { effect: STRING, approval: STRING, accepts: STRING, returns: STRING },
          },
        },
      },
      actions: {
        [ACTION_ID]: {
          appliesTo: {
            principalTypes: ['Agent'],
            resourceTypes: ['Tool'],
            context: {
              type: 'Record',
              attributes: {
                task: opts.task ? inferRecord(opts.task) : { type: 'Record', attributes: {} },
                args,
                session: { type: 'Record', attributes: { label: STRING } },
                calls: windowsType(),
                calls_all: windowsType(),
              },
            },
          },
        },
      },
    },
  };
}
