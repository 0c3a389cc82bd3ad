// The upstream command of `mcp-proxy`, three ways: after `--` (argv as given), `--upstream
// "CMD ARGS"` (one string split into words as a POSIX shell splits them, with no shell run and
// nothing expanded), or a `--config FILE` (JSON: command, args, flags). Clients that cut their
// own argv at the first `--` (the MCP Inspector CLI) need one of the last two.
import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import { parseStrict, WireError } from '../wire/strict-parse.js';
import { isJsonObject, type JsonObject, type JsonValue } from '../core/json.js';
import { UsageError, unknownFlag, type Options } from './args.js';
import { jsonErrorPosition } from '../wire/position.js';

/**
 * Splits a command line into words: blanks separate words; '…' keeps everything literally;
 * "…" keeps everything but `\"`, `\\` (escapes); a backslash outside quotes keeps the next
 * character; backslash-newline joins lines. A shell would expand or interpret `$`, backticks, globs, `~`, `#`, `|&;<>()`; the
 * gate runs no shell, so those are refused unquoted (and `$`/backtick inside "…") rather than
 * silently passed on with a meaning the user did not intend. Quote them with '…'.
 */
export function splitCommandLine(line: string): string[] {
  const words: string[] = [];
  let word: string | null = null;
  const refuse = (c: string, at: number, hint = "quote it with '…' to pass it literally"): never => {
    throw new UsageError(`--upstream: ${JSON.stringify(c)} at column ${at + 1} means something to a shell, and no shell runs the upstream: ${hint}`);
  };
  let i = 0;
  while (i < line.length) {
    const c = line[i];
    if (c === ' ' || c === '\t' || c === '\n') {
      if (word !== null) words.push(word);
      word = null;
      i++;
      continue;
    }
    if (c === "'") {
      const end = line.indexOf("'", i + 1);
      if (end < 0) throw new UsageError(`--upstream: unterminated ' at column ${i + 1}`);
      word = (word ?? '') + line.slice(i + 1, end);
      i = end + 1;
      continue;
    }
    if (c === '"') {
      let out = '';
      let j = i + 1;
      for (;;) {
        if (j >= line.length) throw new UsageError(`--upstream: unterminated " at column ${i + 1}`);
        const d = line[j];
        if (d === '"') break;
        if (d === '\\' && j + 1 < line.length && '"\\$`\n'.includes(line[j + 1])) {
          if (line[j + 1] !== '\n') out += line[j + 1]; // backslash-newline joins lines
          j += 2;
          continue;
        }
        if (d === '$' || d === '`') refuse(d, j);
        out += d;
        j++;
      }
      word = (word ?? '') + out;
      i = j + 1;
      continue;
    }
    if (c === '\\') {
      if (i + 1 >= line.length) throw new UsageError('--upstream: a backslash at the end escapes nothing');
      if (line[i + 1] !== '\n') word = (word ?? '') + line[i + 1]; // backslash-newline joins lines
      i += 2;
      continue;
    }
    if ('|&;<>()$`*?['.includes(c)) refuse(c, i);
    if ((c === '~' || c === '#') && word === null) refuse(c, i);
    word = (word ?? '') + c;
    i++;
  }
  if (word !== null) words.push(word);
  if (words.length === 0) throw new UsageError('--upstream names no command');
  return words;
}

export interface ProxyConfig {
  command: string[];
  /** Flag values as the command line would give them (paths resolved against the file's folder). */
  flags: Record<string, string | boolean | string[]>;
}

/**
 * Reads a `--config` file: `{"command": "node", "args": ["server.js"], "flags": {"manifest":
 * "m.yaml", ...}}`. `pathFlags` are resolved against the file's folder, so a host entry can
 * point at one file and the files beside it.
 */
export function readProxyConfig(path: string, options: Options, pathFlags: ReadonlySet<string>): ProxyConfig {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new UsageError(`cannot read --config ${path}: ${(e as NodeJS.ErrnoException).code ?? 'error'}`);
  }
  let doc: JsonValue;
  try {
    doc = parseStrict(text.replace(/^\uFEFF/, ''));
  } catch (e) {
    if (!(e instanceof WireError)) throw e;
    throw new UsageError(`--config ${path} is not strict JSON: ${jsonErrorPosition(text.replace(/^\uFEFF/, ''), e)}`);
  }
  const bad = (what: string) => new UsageError(`--config ${path}: ${what}`);
  if (!isJsonObject(doc)) throw bad('must be a JSON object');
  for (const k of Object.keys(doc)) if (!['command', 'args', 'flags'].includes(k)) throw bad(`unknown key "${k}" (command, args, flags)`);
  const command: string[] = [];
  if (doc.command !== undefined) {
    if (typeof doc.command !== 'string' || doc.command === '') throw bad('"command" must be a non-empty string');
    command.push(doc.command);
  }
  if (doc.args !== undefined) {
    if (!Array.isArray(doc.args) || !doc.args.every((a) => typeof a === 'string')) throw bad('"args" must be an array of strings');
    if (doc.command === undefined) throw bad('"args" without "command"');
    command.push(...(doc.args as string[]));
  }
  const flags: ProxyConfig['flags'] = {};
  const given = doc.flags ?? {};
  if (!isJsonObject(given)) throw bad('"flags" must be an object');
  const base = dirname(resolve(path));
  const abs = (p: string) => (isAbsolute(p) ? p : resolve(base, p));
  for (const [name, value] of Object.entries(given as JsonObject)) {
    const spec = options[name];
    if (!spec || name === 'config' || name === 'upstream') {
      const e = unknownFlag(`--${name}`, options);
      throw bad(`flags: ${e.message}`);
    }
    if (spec.type === 'boolean') {
      if (typeof value !== 'boolean') throw bad(`flags.${name} must be true or false`);
      flags[name] = value;
    } else if (spec.multiple) {
      const list = typeof value === 'string' ? [value] : value;
      if (!Array.isArray(list) || !list.every((v) => typeof v === 'string')) throw bad(`flags.${name} must be a string or an array of strings`);
      flags[name] = (list as string[]).map((v) => (pathFlags.has(name) ? abs(v) : v));
    } else {
      if (typeof value !== 'string' && typeof value !== 'number') throw bad(`flags.${name} must be a string`);
      flags[name] = pathFlags.has(name) ? abs(String(value)) : String(value);
    }
  }
  return { command, flags };
}
