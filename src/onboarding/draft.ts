// A first manifest and Cedar policy drawn from a server's own tools/list (onboarding.md): every
// tool and argument declared with the rules its inputSchema states and v1 can hold; what v1
// cannot hold is a comment naming the schema keyword, never dropped silently. Write-looking
// tools are left for review: approval and operation id as comments. The output is text (YAML
// with comments, Cedar) for a person to read and commit.
import { buildManifest, parseManifestYaml } from '../contract/manifest.js';
import { compilePattern } from '../contract/pattern.js';
import { isDeepStrictEqual } from 'node:util';

/** One entry of a tools/list answer, as the server gave it. */
export interface ListedTool {
  name: string;
  inputSchema?: unknown;
  annotations?: { readOnlyHint?: boolean; destructiveHint?: boolean; idempotentHint?: boolean; openWorldHint?: boolean; [k: string]: unknown };
}

export interface Draft {
  manifest: string;
  policy: string;
  /** Tools declared (in order) and those left out with why. */
  declared: string[];
  skipped: { name: string; why: string }[];
}

const TOOL_NAME = /^[A-Za-z0-9_][A-Za-z0-9_.:-]{0,127}$/; // the manifest's name rule
const ANNOTATION_KEYWORDS = new Set(['title', 'description', 'default', 'examples', '$comment', '$schema', '$id', 'readOnly', 'writeOnly', 'deprecated']);
/** Keywords of a tool's whole inputSchema the draft turns into rules (or are annotations). */
const INPUT_SCHEMA_HELD = new Set([...ANNOTATION_KEYWORDS, 'type', 'properties', 'required', 'additionalProperties']);
const OPERATION_ID_NAMES = /^(idempotency[_-]?key|operation[_-]?id|request[_-]?id|client[_-]?request[_-]?id|dedup(e|lication)?[_-]?(key|id))$/i;

type Schema = Record<string, unknown>;
const isObj = (v: unknown): v is Schema => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A YAML scalar: JSON's double-quoted form is valid YAML 1.2 and leaves nothing to guess. */
const q = (s: string) => JSON.stringify(s);
const PLAIN_KEY = /^[A-Za-z_][A-Za-z0-9_-]*$/;
const YAML_WORDS = /^(true|false|null|yes|no|on|off|y|n|~)$/i;
const key = (s: string) => (PLAIN_KEY.test(s) && !YAML_WORDS.test(s) ? s : q(s));
const scalar = (v: unknown): string => JSON.stringify(v);
/** Comments carry schema text: one line each, never a line break that would end the comment. */
const oneLine = (s: string) => s.replace(/[\r\n\u2028\u2029]+/g, ' ');

interface Rule {
  parts: [string, string][]; // key, YAML value, in order
  notes: string[]; // what v1 cannot hold
}

/**
 * The JSON Schema `pattern` searches (unanchored); the manifest's matches the whole value. A
 * pattern anchored at both ends with no alternation is the same either way; anything else is
 * wrapped so it may match anywhere, as the server means it.
 */
export function fullMatchPattern(p: string): string {
  if (p.startsWith('^') && p.endsWith('$') && !p.endsWith('\\$') && !p.includes('|')) return p;
  return `(?s:.*)(?:${p})(?s:.*)`;
}

/**
 * How many `items` deep a drafted rule goes. A server's schema nested a thousand deep was turned
 * into a rule as deep, which the YAML reader could not load (the call stack ran out): manifest
 * draft failed, and wrap stopped with no config done after that server.
 */
const MAX_ITEMS_DEPTH = 16;

function ruleOf(schema: unknown, where: string, depth = 0): Rule {
  const parts: Rule['parts'] = [];
  const notes: string[] = [];
  if (!isObj(schema)) return { parts, notes: schema === true || schema === undefined ? notes : [`${where}: schema ${oneLine(JSON.stringify(schema))} is not an object; left unchecked`] };
  const handled = new Set<string>(ANNOTATION_KEYWORDS);
  const note = (k: string, why: string) => notes.push(`${where}: ${k} ${oneLine(JSON.stringify(schema[k]))} ${why}`);

  let type: string | undefined;
  handled.add('type');
  if (typeof schema.type === 'string') {
    if (['string', 'integer', 'number', 'boolean', 'array', 'object'].includes(schema.type)) type = schema.type;
    else note('type', 'has no v1 type; left unchecked');
  } else if (schema.type !== undefined) {
    note('type', 'names several types; v1 holds one, so the type and its rules are left unchecked');
    for (const k of Object.keys(schema)) if (!ANNOTATION_KEYWORDS.has(k) && k !== 'type') note(k, 'applies to one of several types; left unchecked');
    return { parts, notes };
  }
  if (type) parts.push(['type', type]);

  handled.add('enum').add('const');
  if (Array.isArray(schema.enum) && schema.enum.length > 0) parts.push(['enum', scalar(schema.enum)]);
  else if (schema.enum !== undefined) note('enum', 'is empty or not a list; left unchecked');
  if (schema.const !== undefined) {
    if (schema.enum === undefined) parts.push(['enum', scalar([schema.const])]);
    else note('const', 'beside enum; only enum is kept');
  }

  const applies = (k: string, types: string[]) => type === undefined || types.includes(type) || (note(k, `does not apply to type ${type}; left out`), false);
  const nonNegInt = (v: unknown) => Number.isSafeInteger(v) && (v as number) >= 0;
  handled.add('pattern');
  if (schema.pattern !== undefined && applies('pattern', ['string'])) {
    if (typeof schema.pattern !== 'string') note('pattern', 'is not a string; left unchecked');
    else {
      const p = fullMatchPattern(schema.pattern);
      try {
        compilePattern(p);
        parts.push(['pattern', q(p)]);
      } catch {
        note('pattern', 'is not RE2-compatible (linear time); left unchecked: write an RE2 pattern by hand');
      }
    }
  }
  for (const [js, v1] of [['minLength', 'min_len'], ['maxLength', 'max_len']] as const) {
    handled.add(js);
    if (schema[js] !== undefined && applies(js, ['string'])) {
      if (nonNegInt(schema[js])) parts.push([v1, String(schema[js])]);
      else note(js, 'is not a non-negative integer; left unchecked');
    }
  }
  const num = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);
  for (const [js, v1] of [['minimum', 'minimum'], ['maximum', 'maximum']] as const) {
    handled.add(js);
    if (schema[js] !== undefined && applies(js, ['number', 'integer'])) {
      if (num(schema[js])) parts.push([v1, String(schema[js])]);
      else note(js, 'is not a number; left unchecked');
    }
  }
  // exclusiveMinimum/Maximum: a number (draft 6+) or a flag on minimum/maximum (draft 4).
  for (const [js, bound, step] of [['exclusiveMinimum', 'minimum', 1], ['exclusiveMaximum', 'maximum', -1]] as const) {
    handled.add(js);
    const v = schema[js];
    if (v === undefined || v === false) continue;
    const limit = v === true ? schema[bound] : v;
    if (!num(limit)) {
      note(js, 'is not a number; left unchecked');
      continue;
    }
    const has = parts.findIndex(([k]) => k === bound);
    if (type === 'integer' && Number.isSafeInteger(limit + step)) {
      const value = String(limit + step);
      if (has >= 0) parts[has][1] = value;
      else parts.push([bound, value]);
    } else {
      if (has < 0) parts.push([bound, String(limit)]);
      note(js, `is exclusive; v1 bounds are inclusive, so ${limit} itself passes`);
    }
  }
  handled.add('maxItems');
  if (schema.maxItems !== undefined && applies('maxItems', ['array'])) {
    if (nonNegInt(schema.maxItems)) parts.push(['max_items', String(schema.maxItems)]);
    else note('maxItems', 'is not a non-negative integer; left unchecked');
  }
  handled.add('items');
  if (schema.items !== undefined && applies('items', ['array'])) {
    if (Array.isArray(schema.items)) note('items', 'is a tuple; v1 has one rule for every element; left unchecked');
    else if (depth >= MAX_ITEMS_DEPTH) notes.push(`${where}: items nests arrays deeper than ${MAX_ITEMS_DEPTH}; the elements are left unchecked`);
    else {
      const inner = ruleOf(schema.items, `${where}[]`, depth + 1);
      parts.push(['items', flow(inner.parts)]);
      notes.push(...inner.notes);
    }
  }
  handled.add('properties').add('required').add('additionalProperties');
  if (type === 'object' || schema.properties !== undefined) {
    const props = isObj(schema.properties) ? Object.keys(schema.properties) : [];
    if (props.length > 0) notes.push(`${where}: properties ${oneLine(props.join(', '))} of this object are not checked one by one (v1 rules stop at the argument)`);
    if (Array.isArray(schema.required) && schema.required.length > 0) note('required', 'inside an object argument is not checked by v1');
  }
  for (const k of Object.keys(schema)) if (!handled.has(k)) note(k, 'has no v1 rule; left unchecked');
  return { parts, notes };
}

const flow = (parts: [string, string][]) => (parts.length ? `{ ${parts.map(([k, v]) => `${k}: ${v}`).join(', ')} }` : '{}');

function writeLooking(t: ListedTool): { write: boolean; why: string } {
  const a = t.annotations ?? {};
  if (a.readOnlyHint === true) return { write: false, why: 'readOnlyHint true' };
  if (a.destructiveHint === true) return { write: true, why: 'destructiveHint true' };
  if (a.readOnlyHint === false) return { write: true, why: 'readOnlyHint false' };
  return { write: true, why: 'no readOnlyHint: MCP presumes a tool may write' };
}

export interface DraftOptions {
  release: string;
  /** How the server was reached, for the header: draftSource's words, never a secret. */
  source: string;
}

/**
 * A server's URL as anything cloakpipe prints or writes names it: scheme, host and port only.
 * Services put keys in the path (`/mcp/sk-…`) as well as in the query (`?key=…`).
 */
export function shownUrl(url: URL): string {
  return url.pathname === '/' && url.search === '' && url.hash === '' ? url.origin : `${url.origin} (path elided: it may hold a key)`;
}

/**
 * The server as a draft's header names it: its program and how many arguments, or its URL's
 * origin (shownUrl). The arguments (`--api-key=…`, a connection string) are not copied: the
 * manifest is a file people review, commit and share.
 */
export function draftSource(target: { command: string; args: readonly string[] } | { url: URL }): string {
  if ('url' in target) return shownUrl(target.url);
  const n = target.args.length;
  return n === 0 ? target.command : `${target.command} with ${n} argument${n === 1 ? '' : 's'} (not copied here: they may hold credentials)`;
}

export function draftFromTools(tools: readonly ListedTool[], opts: DraftOptions): Draft {
  const declared: string[] = [];
  const skipped: Draft['skipped'] = [];
  const body: string[] = [];
  const seen = new Set<string>();
  /** Whether each declared tool may write, in declared's order: the policy's marks, found once. */
  const writes: boolean[] = [];
  // A name listed twice with two definitions (on one page or two): a host may use the first, the
  // last or both, so neither is drafted (the first was: a read on one page, a write on the next,
  // was drafted a read). The gate too takes two definitions in one listing for a change.
  const firstOf = new Map<string, ListedTool>();
  const twoDefinitions = new Set<string>();
  for (const t of tools) {
    if (typeof t.name !== 'string') continue;
    const first = firstOf.get(t.name);
    if (first === undefined) firstOf.set(t.name, t);
    else if (!isDeepStrictEqual(first, t)) twoDefinitions.add(t.name);
  }
  for (const t of tools) {
    if (typeof t.name !== 'string' || !TOOL_NAME.test(t.name)) {
      skipped.push({ name: String(t.name), why: 'its name is not a valid manifest tool name' });
      continue;
    }
    if (seen.has(t.name)) continue; // one definition listed again, or named below already
    seen.add(t.name);
    if (twoDefinitions.has(t.name)) {
      skipped.push({ name: t.name, why: 'listed twice with two definitions; a host may use either: review the server, declare it by hand' });
      continue;
    }
    declared.push(t.name);
    const schema = isObj(t.inputSchema) ? t.inputSchema : {};
    const props = isObj(schema.properties) ? schema.properties : {};
    const req = new Set(Array.isArray(schema.required) ? schema.required.filter((r): r is string => typeof r === 'string') : []);
    const { write, why } = writeLooking(t);
    writes.push(write);
    const lines: string[] = [];
    const toolNotes: string[] = [];
    lines.push(`  ${key(t.name)}:`);
    lines.push(`    effect: ${write ? 'write' : 'read'}${write ? `    # ${why}` : ''}`);
    if (write) {
      const idArg = Object.keys(props).find((n) => OPERATION_ID_NAMES.test(n));
      lines.push(`    # REVIEW: a write. Require a signed approval for each call by uncommenting:`);
      lines.push(`    # approval: required`);
      if (idArg) lines.push(`    # operation_id: ${key(idArg)}    # the argument that names the operation (an idempotency key)`);
      else lines.push(`    # operation_id: ARGUMENT    # none of its arguments looks like an idempotency key; the gate then names unsettled calls by fingerprint`);
    }
    const argLines: string[] = [];
    for (const [name, s] of Object.entries(props)) {
      const rule = ruleOf(s, name);
      if (req.has(name)) rule.parts.push(['required', 'true']);
      argLines.push(`      ${key(name)}: ${flow(rule.parts)}`);
      toolNotes.push(...rule.notes);
    }
    for (const r of req) if (!Object.hasOwn(props, r)) toolNotes.push(`required ${r} has no property schema; declared without rules`), argLines.push(`      ${key(r)}: { required: true }`);
    if (schema.additionalProperties !== undefined && schema.additionalProperties !== false)
      toolNotes.push(`additionalProperties ${oneLine(JSON.stringify(schema.additionalProperties))}: the server takes arguments it does not name; the gate refuses every argument the manifest does not declare`);
    if (schema.type !== undefined && schema.type !== 'object') toolNotes.push(`inputSchema type ${oneLine(JSON.stringify(schema.type))} is not "object"; the gate takes named arguments only`);
    // Every other keyword of the whole schema, known to JSON Schema or not, is named.
    for (const k of Object.keys(schema)) if (!INPUT_SCHEMA_HELD.has(k)) toolNotes.push(`inputSchema ${oneLine(k)} has no v1 rule; left unchecked`);
    if (toolNotes.length) lines.push(...toolNotes.map((n) => `    # v1 cannot hold: ${oneLine(n)}`));
    lines.push(argLines.length ? '    arguments:' : '    arguments: {}', ...argLines);
    body.push(...lines);
  }
  const header = [
    `# Drafted by \`cloakpipe manifest draft\` from the tools/list of: ${oneLine(opts.source)}`,
    '# Review before you enforce: every tool and argument the server lists is declared with the',
    "# rules its inputSchema states (patterns are the server's, as RE2 full matches); lines marked",
    '# "v1 cannot hold" name what the schema says and this manifest does not check; REVIEW marks',
    '# tools that may write. Annotations (title, description, default, examples) are not rules and',
    '# are left out. The gate refuses any argument a tool does not declare, even where the',
    "# server's schema would let it through.",
  ];
  for (const s of skipped) header.push(`# NOT DECLARED: ${oneLine(JSON.stringify(s.name))}: ${s.why}`);
  const manifest = [...header, 'version: 1', `release: ${q(opts.release)}`, declared.length ? 'tools:' : 'tools: {}', ...body, ''].join('\n');
  const policy = [
    `// Drafted by \`cloakpipe manifest draft\` for ${oneLine(opts.release)}: permits exactly the tools the`,
    '// manifest declares, one policy each, so a review can remove or narrow one (Cedar denies the rest).',
    '// Writes are marked: narrow them (context.task, context.calls) or require approval in the manifest.',
    // Each declared tool by its index: looked up by name in the whole list, 30,000 tools took
    // some 450 million comparisons (18 s).
    ...declared.flatMap((name, i) => {
      const w = writes[i];
      return ['', `@id(${JSON.stringify(`${w ? 'write' : 'read'}:${name}`)})`, `permit (principal, action == Action::"call_tool", resource == Tool::${JSON.stringify(name)});${w ? ' // REVIEW: may write' : ''}`];
    }),
    '',
  ].join('\n');
  return { manifest, policy, declared, skipped };
}

/**
 * Throws unless the drafted manifest loads as the gate loads it (ManifestError; a YAML error or a
 * key twice as an Error): a draft that does not is the drafter's fault.
 */
export function checkDraftLoads(manifest: string): void {
  buildManifest(parseManifestYaml(manifest));
}
