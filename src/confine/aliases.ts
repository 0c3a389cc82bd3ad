// The operator's alias file: the agent names operations, never tools. Guards against: an alias
// pointing at a tool the release's manifest does not declare, and anything in the file that is
// not a plain operation → tool entry (it refuses start: a typo must not silently widen access).
import { readRegularFile } from '../util/regular-file.js';
import { parse as parseYaml } from 'yaml';

export class AliasError extends Error {}

const OPERATION = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$/;
const RESERVED = new Set(['__proto__', 'constructor', 'prototype']);

export function buildAliases(doc: unknown, manifestTools: ReadonlySet<string>): Map<string, string> {
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) throw new AliasError('aliases: expected a map from operation names to manifest tools');
  const out = new Map<string, string>();
  for (const [op, tool] of Object.entries(doc as Record<string, unknown>)) {
    if (!OPERATION.test(op) || RESERVED.has(op)) throw new AliasError('aliases: an operation name is not a plain name');
    if (typeof tool !== 'string') throw new AliasError(`aliases: "${op}" must map to a tool name`);
    if (!manifestTools.has(tool)) throw new AliasError(`aliases: "${op}" maps to a tool the manifest does not declare`);
    out.set(op, tool);
  }
  if (out.size === 0) throw new AliasError('aliases: no operation declared');
  return out;
}

/**
 * The tool an agent's operation names: its alias's target, or, for an operation the file does
 * not declare, a name no manifest can declare (tool names hold no space), so the gate's contract
 * check refuses it `undeclared_tool` and the ledger keeps its digest, never the agent's text.
 */
export function toolOf(aliases: ReadonlyMap<string, string>, operation: string): string {
  return aliases.get(operation) ?? `unaliased ${operation}`;
}

export function loadAliases(path: string, manifestTools: ReadonlySet<string>): Map<string, string> {
  let text: string;
  try {
    text = readRegularFile(path).toString('utf8'); // as the manifest is read: a FIFO or a device is refused
  } catch (e) {
    throw new AliasError((e as { code?: string }).code === 'not a regular file' ? `aliases file ${path} is not a regular file` : `cannot read aliases file ${path}`);
  }
  let doc: unknown;
  try {
    doc = parseYaml(text, { uniqueKeys: true, prettyErrors: false });
  } catch {
    throw new AliasError(`aliases file ${path} is not valid YAML or JSON`);
  }
  return buildAliases(doc, manifestTools);
}
