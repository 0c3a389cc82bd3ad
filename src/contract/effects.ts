// The manifest's `effects:` section (issue 9): per protected effect, the paths able to produce it,
// each with its kind, route and expected mediator, and an optional completeness statement.
// Guards against a scope declaration that reads as stronger than it is: unknown keys, unknown
// kinds, a gate route through an undeclared tool, or confinement claimed for a path outside the
// agent are load errors, so a typo cannot silently turn into a claim the report then repeats.
// Declaring paths is a statement about the world, never evidence: the report treats it so.

export const PATH_KINDS = ['agent', 'deployment'] as const;
export type PathKind = (typeof PATH_KINDS)[number];

/** How a path reaches the effect. `gate` is the only route the gate itself decides. */
export const ROUTE_VIAS = ['gate', 'network', 'process', 'file', 'database', 'service', 'other'] as const;
export type RouteVia = (typeof ROUTE_VIAS)[number];

/** The confinement protections whose removal the evidence suite observes (confinement.md). */
export const PROTECTIONS = ['network', 'read_only_root', 'log_driver', 'sink_ceiling'] as const;
export type Protection = (typeof PROTECTIONS)[number];

export const MEDIATOR_TYPES = ['gate', 'confinement', 'external', 'none'] as const;
export type MediatorType = (typeof MEDIATOR_TYPES)[number];

export interface Route {
  via: RouteVia;
  tool?: string; // gate
  endpoint?: string; // network
  command?: string; // process
  path?: string; // file
  consumer?: string; // file (optional)
  target?: string; // database, service
  detail?: string; // any; required for other
}

export type Mediator =
  | { type: 'gate' }
  | { type: 'confinement'; protection: Protection }
  | { type: 'external'; control: string }
  | { type: 'none' };

export interface EffectPath {
  id: string;
  kind: PathKind;
  description?: string;
  route: Route;
  mediator: Mediator;
}

export interface CompletenessStatement {
  assessed_by: string;
  assessed_at: string;
  basis: string[];
}

export interface EffectDecl {
  name: string;
  description: string;
  paths: EffectPath[];
  completeness?: CompletenessStatement;
}

const NAME = /^[A-Za-z0-9_][A-Za-z0-9_.:-]{0,127}$/;
const DATE = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2}))?$/;
const EFFECT_KEYS = new Set(['description', 'paths', 'completeness']);
const PATH_KEYS = new Set(['id', 'kind', 'description', 'route', 'mediator']);
const COMPLETENESS_KEYS = new Set(['assessed_by', 'assessed_at', 'basis']);
/** Route keys by `via`: the first list is required, the second optional. */
const ROUTE_KEYS: Record<RouteVia, [string[], string[]]> = {
  gate: [['tool'], ['detail']],
  network: [['endpoint'], ['detail']],
  process: [['command'], ['detail']],
  file: [['path'], ['consumer', 'detail']],
  database: [['target'], ['detail']],
  service: [['target'], ['detail']],
  other: [['detail'], []],
};
const MEDIATOR_KEYS: Record<MediatorType, string[]> = { gate: [], confinement: ['protection'], external: ['control'], none: [] };

function isPlain(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

const text = (v: unknown) => typeof v === 'string' && v.trim().length > 0 && v.length <= 1000;

class Problems {
  readonly list: string[] = [];
  add(where: string, msg: string) {
    this.list.push(`${where}: ${msg}`);
  }
  keys(obj: Record<string, unknown>, allowed: Iterable<string>, where: string) {
    const ok = new Set(allowed);
    for (const k of Object.keys(obj)) if (!ok.has(k)) this.add(where, `unknown key "${k}"`);
  }
}

function checkRoute(raw: unknown, where: string, tools: ReadonlySet<string>, p: Problems): Route | null {
  if (!isPlain(raw)) return p.add(where, 'must be a mapping with a "via"'), null;
  const via = raw.via as RouteVia;
  if (!ROUTE_VIAS.includes(via)) return p.add(`${where}.via`, `must be one of ${ROUTE_VIAS.join(', ')}`), null;
  const [req, opt] = ROUTE_KEYS[via];
  p.keys(raw, ['via', ...req, ...opt], where);
  for (const k of [...req, ...opt]) {
    if (raw[k] === undefined) {
      if (req.includes(k)) p.add(where, `a ${via} route needs "${k}"`);
    } else if (!text(raw[k])) p.add(`${where}.${k}`, 'must be a non-empty string');
  }
  if (via === 'gate' && typeof raw.tool === 'string' && !tools.has(raw.tool)) p.add(`${where}.tool`, `names undeclared tool "${raw.tool}"`);
  return raw as unknown as Route;
}

function checkMediator(raw: unknown, where: string, p: Problems): Mediator | null {
  if (!isPlain(raw)) return p.add(where, 'must be a mapping with a "type"'), null;
  const type = raw.type as MediatorType;
  if (!MEDIATOR_TYPES.includes(type)) return p.add(`${where}.type`, `must be one of ${MEDIATOR_TYPES.join(', ')}`), null;
  p.keys(raw, ['type', ...MEDIATOR_KEYS[type]], where);
  if (type === 'confinement' && !PROTECTIONS.includes(raw.protection as Protection))
    p.add(`${where}.protection`, `must be one of ${PROTECTIONS.join(', ')}`);
  if (type === 'external' && !text(raw.control)) p.add(`${where}.control`, 'must name the control (a non-empty string)');
  return raw as unknown as Mediator;
}

function checkPath(raw: unknown, where: string, tools: ReadonlySet<string>, p: Problems): EffectPath | null {
  if (!isPlain(raw)) return p.add(where, 'a path must be a mapping'), null;
  p.keys(raw, PATH_KEYS, where);
  if (typeof raw.id !== 'string' || !NAME.test(raw.id)) p.add(`${where}.id`, 'must be a name');
  if (!PATH_KINDS.includes(raw.kind as PathKind)) p.add(`${where}.kind`, 'must be agent or deployment');
  if (raw.description !== undefined && !text(raw.description)) p.add(`${where}.description`, 'must be a non-empty string');
  const route = checkRoute(raw.route, `${where}.route`, tools, p);
  const mediator = checkMediator(raw.mediator, `${where}.mediator`, p);
  if (route && mediator) {
    // The gate decides only calls that reach it as tools/call: a gate route is gate-mediated
    // and nothing else is.
    if ((route.via === 'gate') !== (mediator.type === 'gate')) p.add(where, 'a gate route and a gate mediator go together');
    // Confinement confines the agent; it cannot control another service's writes.
    if (mediator.type === 'confinement' && raw.kind !== 'agent') p.add(where, 'confinement mediates agent paths only');
  }
  return raw as unknown as EffectPath;
}

function checkCompleteness(raw: unknown, where: string, p: Problems) {
  if (!isPlain(raw)) return p.add(where, 'must be a mapping');
  p.keys(raw, COMPLETENESS_KEYS, where);
  if (!text(raw.assessed_by)) p.add(`${where}.assessed_by`, 'must say who assessed the path set');
  if (typeof raw.assessed_at !== 'string' || !DATE.test(raw.assessed_at)) p.add(`${where}.assessed_at`, 'must be a date (YYYY-MM-DD or ISO 8601)');
  if (!Array.isArray(raw.basis) || raw.basis.length === 0 || !raw.basis.every(text))
    p.add(`${where}.basis`, 'must be a non-empty list of the evidence the assessment rests on');
}

/**
 * Every problem in an `effects:` section, as `effects.<effect>...: message` lines (empty when it
 * is valid). `tools` are the manifest's declared tool names. Called by the manifest loader.
 */
export function effectsErrors(raw: unknown, tools: Iterable<string>): string[] {
  const p = new Problems();
  const declared = new Set(tools);
  if (!isPlain(raw)) return ['effects: must be a mapping'];
  if (Object.keys(raw).length === 0) p.add('effects', 'declares no effect (omit the section instead)');
  for (const [name, eff] of Object.entries(raw)) {
    const where = `effects.${name}`;
    if (!NAME.test(name)) p.add(where, 'invalid effect name');
    if (!isPlain(eff)) {
      p.add(where, 'an effect must be a mapping');
      continue;
    }
    p.keys(eff, EFFECT_KEYS, where);
    if (!text(eff.description)) p.add(`${where}.description`, 'must be a non-empty string');
    if (!Array.isArray(eff.paths) || eff.paths.length === 0) p.add(`${where}.paths`, 'must be a non-empty list');
    else {
      const ids = new Set<string>();
      eff.paths.forEach((raw: unknown, i: number) => {
        const path = checkPath(raw, `${where}.paths[${i}]`, declared, p);
        if (path && typeof path.id === 'string') {
          if (ids.has(path.id)) p.add(`${where}.paths[${i}].id`, `duplicate path id "${path.id}"`);
          ids.add(path.id);
        }
      });
    }
    if (eff.completeness !== undefined) checkCompleteness(eff.completeness, `${where}.completeness`, p);
  }
  return p.list;
}

export class EffectsError extends Error {}

/** The validated section as typed declarations, in manifest order. Throws EffectsError. */
export function parseEffects(raw: unknown, tools: Iterable<string>): EffectDecl[] {
  const errors = effectsErrors(raw, tools);
  if (errors.length) throw new EffectsError(`manifest ${errors.join('; ')}`);
  return Object.entries(raw as Record<string, Record<string, unknown>>).map(([name, e]) => ({
    name,
    description: e.description as string,
    paths: e.paths as EffectPath[],
    ...(e.completeness !== undefined ? { completeness: e.completeness as CompletenessStatement } : {}),
  }));
}

/** One line naming a route, for reports. */
export function describeRoute(r: Route): string {
  const main =
    r.via === 'gate' ? `tool ${r.tool}` : r.via === 'network' ? r.endpoint : r.via === 'process' ? r.command : r.via === 'file' ? r.path + (r.consumer ? ` → ${r.consumer}` : '') : r.via === 'other' ? r.detail : r.target;
  return `${r.via}: ${main}`;
}

export function describeMediator(m: Mediator): string {
  return m.type === 'confinement' ? `confinement (${m.protection})` : m.type === 'external' ? `external (${m.control})` : m.type;
}
