// The manifest v1 loader (product.md section 3). Anything it does not understand is a load
// error: a typo in a security contract must stop the gate, not silently allow.
import { readRegularFile } from '../util/regular-file.js';
import { isMap, isScalar, parseDocument, visit } from 'yaml';
import type { ArgumentRule, ClassifyRule, Manifest, ToolDecl } from './manifest-types.js';
import { compilePattern, type LinearPattern } from './pattern.js';
import { digestJson, type Digest } from '../core/digest.js';
import { effectsErrors } from './effects.js';

export class ManifestError extends Error {}

export const DEFAULT_LABELS = ['public', 'internal', 'confidential', 'restricted'];

const TOP_KEYS = new Set(['version', 'release', 'labels', 'tools', 'classify', 'pins', 'effects']);
const TOOL_KEYS = new Set(['effect', 'approval', 'returns', 'accepts', 'operation_id', 'arguments', 'description']);
const RULE_KEYS = new Set([
  'type', 'required', 'enum', 'pattern', 'min_len', 'max_len', 'minimum', 'maximum', 'max_items', 'items', 'one_of_context', 'description',
]);
const TYPES = new Set(['string', 'integer', 'number', 'boolean', 'array', 'object']);
const NAME = /^[A-Za-z0-9_][A-Za-z0-9_.:-]{0,127}$/;

export interface LoadedManifest {
  manifest: Manifest;
  digest: Digest;
  /** Compiled patterns, keyed by the rule object that declares them. */
  patterns: WeakMap<ArgumentRule, LinearPattern>;
  classify: { label: string; pattern: LinearPattern }[];
}

function fail(where: string, msg: string): never {
  throw new ManifestError(`manifest ${where}: ${msg}`);
}

function isPlain(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function checkKeys(obj: Record<string, unknown>, allowed: Set<string>, where: string) {
  for (const k of Object.keys(obj)) if (!allowed.has(k)) fail(where, `unknown key "${k}"`);
}

function nonNegInt(v: unknown, where: string) {
  if (!Number.isSafeInteger(v) || (v as number) < 0) fail(where, 'must be a non-negative integer');
}

function loadRule(raw: unknown, where: string, patterns: WeakMap<ArgumentRule, LinearPattern>): ArgumentRule {
  if (!isPlain(raw)) fail(where, 'an argument rule must be a mapping');
  checkKeys(raw, RULE_KEYS, where);
  const rule = raw as ArgumentRule;
  if (rule.type !== undefined && !TYPES.has(rule.type)) fail(where, `unknown type "${String(rule.type)}"`);
  if (rule.required !== undefined && typeof rule.required !== 'boolean') fail(where, 'required must be a boolean');
  if (rule.enum !== undefined && (!Array.isArray(rule.enum) || rule.enum.length === 0)) fail(where, 'enum must be a non-empty list');
  for (const k of ['min_len', 'max_len', 'max_items'] as const) if (rule[k] !== undefined) nonNegInt(rule[k], `${where}.${k}`);
  for (const k of ['minimum', 'maximum'] as const)
    if (rule[k] !== undefined && (typeof rule[k] !== 'number' || !Number.isFinite(rule[k]))) fail(`${where}.${k}`, 'must be a number');
  if (rule.pattern !== undefined) {
    if (typeof rule.pattern !== 'string') fail(where, 'pattern must be a string');
    try {
      patterns.set(rule, compilePattern(rule.pattern));
    } catch {
      fail(`${where}.pattern`, 'not a valid linear-time (RE2) pattern');
    }
  }
  if (rule.one_of_context !== undefined && (typeof rule.one_of_context !== 'string' || !/^[A-Za-z0-9_]+(\.[A-Za-z0-9_]+)*$/.test(rule.one_of_context)))
    fail(where, 'one_of_context must be a dotted path');
  if (rule.items !== undefined) {
    if (rule.type !== undefined && rule.type !== 'array') fail(where, 'items applies to arrays only');
    rule.items = loadRule(rule.items, `${where}.items`, patterns);
  }
  return rule;
}

function loadTool(raw: unknown, where: string, rank: Map<string, number>, patterns: WeakMap<ArgumentRule, LinearPattern>): ToolDecl {
  if (!isPlain(raw)) fail(where, 'a tool must be a mapping');
  checkKeys(raw, TOOL_KEYS, where);
  const tool = raw as unknown as ToolDecl;
  if (tool.effect !== 'read' && tool.effect !== 'write') fail(where, 'effect must be read or write');
  if (tool.approval !== undefined && tool.approval !== 'required' && tool.approval !== 'none') fail(where, 'approval must be required or none');
  for (const k of ['returns', 'accepts'] as const)
    if (tool[k] !== undefined && !rank.has(tool[k] as string)) fail(`${where}.${k}`, `unknown label "${String(tool[k])}"`);
  if (tool.arguments === undefined) tool.arguments = {};
  if (!isPlain(tool.arguments)) fail(where, 'arguments must be a mapping');
  for (const [name, rule] of Object.entries(tool.arguments)) tool.arguments[name] = loadRule(rule, `${where}.arguments.${name}`, patterns);
  if (tool.operation_id !== undefined) {
    if (tool.effect !== 'write') fail(where, 'operation_id applies to write tools only');
    if (!Object.prototype.hasOwnProperty.call(tool.arguments, tool.operation_id)) fail(where, `operation_id names undeclared argument "${tool.operation_id}"`);
  }
  return tool;
}

/** Validate a parsed manifest document. */
export function buildManifest(doc: unknown): LoadedManifest {
  if (!isPlain(doc)) fail('document', 'must be a mapping');
  let digest: Digest;
  try {
    digest = digestJson(doc); // of the document as written, before defaults are filled in
  } catch {
    fail('document', 'holds a value JSON cannot represent');
  }
  checkKeys(doc, TOP_KEYS, 'document');
  if (doc.version !== 1) fail('version', 'must be 1');
  if (typeof doc.release !== 'string' || !doc.release) fail('release', 'must be a non-empty string');
  const labels = doc.labels === undefined ? DEFAULT_LABELS : doc.labels;
  if (!Array.isArray(labels) || labels.length === 0 || !labels.every((l) => typeof l === 'string' && NAME.test(l)))
    fail('labels', 'must be a non-empty list of names');
  if (new Set(labels).size !== labels.length) fail('labels', 'duplicate label');
  const rank = new Map<string, number>(labels.map((l: string, i: number) => [l, i]));
  if (!isPlain(doc.tools)) fail('tools', 'must be a mapping');
  const patterns = new WeakMap<ArgumentRule, LinearPattern>();
  const tools: Record<string, ToolDecl> = {};
  for (const [name, raw] of Object.entries(doc.tools)) {
    if (!NAME.test(name)) fail(`tools.${name}`, 'invalid tool name');
    tools[name] = loadTool(raw, `tools.${name}`, rank, patterns);
  }
  const classifyRaw = doc.classify === undefined ? [] : doc.classify;
  if (!Array.isArray(classifyRaw)) fail('classify', 'must be a list');
  const classify: LoadedManifest['classify'] = [];
  classifyRaw.forEach((c: unknown, i: number) => {
    if (!isPlain(c)) fail(`classify[${i}]`, 'must be a mapping');
    checkKeys(c, new Set(['label', 'pattern']), `classify[${i}]`);
    if (typeof c.label !== 'string' || !rank.has(c.label)) fail(`classify[${i}].label`, 'unknown label');
    if (typeof c.pattern !== 'string') fail(`classify[${i}].pattern`, 'must be a string');
    try {
      classify.push({ label: c.label, pattern: compilePattern(c.pattern) });
    } catch {
      fail(`classify[${i}].pattern`, 'not a valid linear-time (RE2) pattern');
    }
  });
  if (doc.pins !== undefined) {
    if (!isPlain(doc.pins)) fail('pins', 'must be a mapping');
    for (const [tool, d] of Object.entries(doc.pins)) {
      if (!Object.prototype.hasOwnProperty.call(tools, tool)) fail(`pins.${tool}`, 'pins a tool the manifest does not declare');
      if (typeof d !== 'string' || !/^sha256:[0-9a-f]{64}$/.test(d)) fail(`pins.${tool}`, 'must be a sha256:<hex> digest');
    }
  }
  if (doc.effects !== undefined) {
    // Execution scope (issue 9): validated strictly by src/contract/effects.ts; any problem refuses start-up.
    const problems = effectsErrors(doc.effects, Object.keys(tools));
    if (problems.length) throw new ManifestError(`manifest ${problems.join('; ')}`);
  }
  const manifest: Manifest = {
    version: 1,
    release: doc.release,
    labels,
    tools,
    classify: classifyRaw as ClassifyRule[],
    ...(doc.pins !== undefined ? { pins: doc.pins as Record<string, string> } : {}),
    ...(doc.effects !== undefined ? { effects: doc.effects as Record<string, unknown> } : {}),
  };
  return { manifest, digest, patterns, classify };
}

/**
 * A manifest's YAML 1.2 core-schema text (a superset of JSON) as data; a key twice in one mapping
 * is an error. Keys are checked with a set per mapping: the YAML reader's own check compares
 * every pair of keys, some 12 s for 30,000 tools.
 */
export function parseManifestYaml(text: string): unknown {
  const doc = parseDocument(text, { schema: 'core', uniqueKeys: false });
  if (doc.errors.length) throw doc.errors[0];
  visit(doc, {
    Map(_, map) {
      if (!isMap(map)) return;
      const seen = new Set<string>();
      for (const item of map.items) {
        const k = isScalar(item.key) ? JSON.stringify(item.key.value) : String(item.key);
        if (seen.has(k)) throw new Error(`a mapping has the key ${k} twice`);
        seen.add(k);
      }
    },
  });
  return doc.toJS({ maxAliasCount: 100 });
}

export function loadManifest(path: string): LoadedManifest {
  let text: string;
  try {
    text = readRegularFile(path).toString('utf8');
  } catch (e) {
    throw new ManifestError(`cannot read manifest ${path}: ${(e as NodeJS.ErrnoException).code ?? 'error'}`);
  }
  let doc: unknown;
  try {
    doc = parseManifestYaml(text);
  } catch (e) {
    throw new ManifestError(`manifest ${path} is not valid YAML/JSON: ${(e as Error).message.split('\n')[0]}`);
  }
  return buildManifest(doc);
}
