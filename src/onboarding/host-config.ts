// Reading a host's MCP config and editing its text in place: only the values wrap changes are
// rewritten (jsonc-parser's modify/applyEdits), so other keys, their order, comments and
// indentation stay as the user or the host wrote them.
import { applyEdits, findNodeAtLocation, getNodeValue, modify, parseTree, printParseErrorCode, type Node, type ParseError } from 'jsonc-parser';
import type { HostConfig } from './hosts.js';
import { parseUpstreamUrl } from '../doors/upstream/http.js';
import { checkUnique, parseHeaderLine, UpstreamHeaderError } from '../doors/upstream/headers.js';

export class ConfigError extends Error {}

export interface ParsedConfig {
  /** The text after any byte order mark: what edits apply to. */
  text: string;
  /** The byte order mark the file starts with ('' when none), put back on write. */
  bom: string;
  key: 'mcpServers' | 'servers';
  /** Where the servers object sits: [...cfg.under, key]. */
  at: string[];
  root: Node;
  entries: ConfigEntry[];
}

/** One server entry, as the host would read it. */
export interface ConfigEntry {
  name: string;
  /** The entry's exact text, and where it sits. */
  text: string;
  offset: number;
  value: unknown;
}

export function lineColumn(text: string, offset: number): { line: number; column: number } {
  let line = 1;
  let start = 0;
  for (let i = 0; i < offset && i < text.length; i++) if (text[i] === '\n') line++, (start = i + 1);
  return { line, column: offset - start + 1 };
}

function at(path: string, text: string, offset: number): string {
  const { line, column } = lineColumn(text, offset);
  return `${path}:${line}:${column}`;
}

const UTF8 = new TextDecoder('utf-8', { ignoreBOM: true });

/**
 * The file's text, when its bytes are UTF-8. Decoded leniently, a byte that is not (a Latin-1 é)
 * would become U+FFFD in the text wrap writes back and in its backup: the original byte gone
 * from both. Named with line and column instead, and the file left as it is.
 */
export function decodeConfig(cfg: HostConfig, bytes: Uint8Array): string {
  const text = UTF8.decode(bytes);
  let i = text.indexOf('\ufffd');
  while (i >= 0) {
    const off = Buffer.byteLength(text.slice(0, i));
    // A U+FFFD written in the file itself (EF BF BD) is text like any other.
    if (!(bytes[off] === 0xef && bytes[off + 1] === 0xbf && bytes[off + 2] === 0xbd))
      throw new ConfigError(`${at(cfg.path, text, i)}: not valid UTF-8 (byte 0x${bytes[off].toString(16).padStart(2, '0')}); left as is: rewritten, that byte would be lost`);
    i = text.indexOf('\ufffd', i + 1);
  }
  return text;
}

/** Parses as the host would (JSON, or JSONC where it allows it); anything else is a ConfigError naming line and column. */
export function parseConfig(cfg: HostConfig, text: string): ParsedConfig | undefined {
  try {
    return parseNested(cfg, text);
  } catch (e) {
    // jsonc-parser reads by recursion: a file nested some thousands deep (JSON.parse reads it)
    // overflowed the stack, and wrap ended there without naming the file or doing the next.
    if (e instanceof RangeError) throw new ConfigError(`${cfg.path}: nests deeper than wrap can read; left as is`);
    throw e;
  }
}

function parseNested(cfg: HostConfig, text: string): ParsedConfig | undefined {
  const errors: ParseError[] = [];
  const body = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  const shift = text.length - body.length;
  const root = parseTree(body, errors, { disallowComments: !cfg.jsonc, allowTrailingComma: cfg.jsonc, allowEmptyContent: false });
  if (errors.length) {
    const e = errors[0];
    throw new ConfigError(`${at(cfg.path, text, e.offset + shift)}: not valid ${cfg.jsonc ? 'JSONC' : 'JSON'} (${printParseErrorCode(e.error)})`);
  }
  if (!root || root.type !== 'object') throw new ConfigError(`${at(cfg.path, text, shift)}: not a JSON object`);
  // Editors that read JSONC (VS Code, Cursor) take a byte order mark and may write one; the
  // plain-JSON hosts' readers (JSON.parse) refuse it, so such a file is not what they read.
  if (shift && !cfg.jsonc) throw new ConfigError(`${at(cfg.path, text, 0)}: starts with a byte order mark, which the host's JSON reader refuses; left as is`);
  const propsOf = (o: Node, k: string) => o.children?.filter((p) => p.children?.[0].value === k) ?? [];
  const twice = (p: Node, k: string) => new ConfigError(`${at(cfg.path, text, p.offset + shift)}: "${k}" appears twice; hosts differ on which one counts`);
  // Each key on the way to the servers is the one the host reads: with a key twice, wrap would
  // edit the first and the host read the last.
  let holder: Node = root;
  for (const k of cfg.under ?? []) {
    const props = propsOf(holder, k);
    if (props.length > 1) throw twice(props[1], k);
    const n = props[0]?.children?.[1];
    if (!n || n.type !== 'object') return undefined;
    holder = n;
  }
  const keyOf = (k: string) => propsOf(holder, k);
  let key = cfg.key;
  if (key === undefined) key = keyOf('mcpServers').length ? 'mcpServers' : keyOf('servers').length ? 'servers' : undefined;
  if (key === undefined) return undefined;
  const props = keyOf(key);
  if (props.length === 0) return undefined;
  if (props.length > 1) throw twice(props[1], key);
  const servers = props[0].children![1];
  if (servers.type !== 'object') throw new ConfigError(`${at(cfg.path, text, servers.offset + shift)}: "${key}" is not an object`);
  const entries: ConfigEntry[] = [];
  const seen = new Set<string>();
  for (const p of servers.children ?? []) {
    const name = p.children![0].value as string;
    if (seen.has(name)) throw new ConfigError(`${at(cfg.path, text, p.offset + shift)}: server ${JSON.stringify(name)} appears twice; hosts differ on which one counts`);
    seen.add(name);
    const v = p.children![1];
    const again = repeatedKey(v);
    if (again) throw new ConfigError(`${at(cfg.path, text, again.offset + shift)}: server ${JSON.stringify(name)}: ${JSON.stringify(again.children![0].value)} appears twice; hosts differ on which one counts`);
    entries.push({ name, text: body.slice(v.offset, v.offset + v.length), offset: v.offset, value: getNodeValue(v) });
  }
  return { text: body, bom: text.slice(0, shift), key, at: [...(cfg.under ?? []), key], root, entries };
}

/**
 * The second property of one name in an object or in any object under it. The host reads the
 * last and jsonc-parser's modify edits the first: a wrapped "command" or "args" beside a second
 * one would leave the host starting the server ungated.
 */
function repeatedKey(node: Node): Node | undefined {
  if (node.type === 'object') {
    const seen = new Set<string>();
    for (const p of node.children ?? []) {
      const k = p.children![0].value as string;
      if (seen.has(k)) return p;
      seen.add(k);
    }
  }
  for (const c of node.children ?? []) {
    const hit = repeatedKey(c);
    if (hit) return hit;
  }
  return undefined;
}

/** A stdio or remote entry the gate can stand in front of, or why not. */
export type Classified =
  | { kind: 'stdio'; command: string; args: string[]; env?: Record<string, string>; cwd?: string }
  | { kind: 'remote'; url: URL; headers: [string, string][]; keys: RemoteKeys }
  | { kind: 'wrapped'; server: string }
  | { kind: 'skip'; why: string; remote?: boolean };

/** Which keys a remote entry spells its URL and transport with (they differ by host). */
export interface RemoteKeys {
  url: 'url' | 'serverUrl';
  type: boolean;
}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const VARIABLE = /\$\{[^}]*\}/;
/** Streamable HTTP as hosts spell it; "sse" is the older HTTP+SSE transport, which the gate does not speak. */
const STREAMABLE = new Set(['http', 'streamable-http', 'streamableHttp']);

export function classify(value: unknown): Classified {
  if (!isObj(value)) return { kind: 'skip', why: 'the entry is not an object' };
  if (typeof value.command === 'string' && Array.isArray(value.args) && value.args.every((a) => typeof a === 'string')) {
    const wrapped = gateServerOf(value.command, value.args as string[]);
    if (wrapped !== undefined) return { kind: 'wrapped', server: wrapped };
  }
  if (value.url !== undefined || value.serverUrl !== undefined || value.type === 'http' || value.type === 'sse' || value.type === 'streamable-http') return classifyRemote(value);
  if (typeof value.command !== 'string' || value.command === '') return { kind: 'skip', why: 'no "command"' };
  const args = value.args ?? [];
  if (!Array.isArray(args) || !args.every((a) => typeof a === 'string')) return { kind: 'skip', why: '"args" is not a list of strings' };
  if (value.env !== undefined && (!isObj(value.env) || !Object.values(value.env).every((v) => typeof v === 'string'))) return { kind: 'skip', why: '"env" is not an object of strings' };
  if (value.cwd !== undefined && typeof value.cwd !== 'string') return { kind: 'skip', why: '"cwd" is not a string' };
  if (value.envFile !== undefined) return { kind: 'skip', why: '"envFile": the host loads it and wrap cannot start the server as the host does; wrap it by hand' };
  const words = [value.command, ...(args as string[]), ...Object.values((value.env as Record<string, string>) ?? {}), ...(typeof value.cwd === 'string' ? [value.cwd] : [])];
  if (words.some((w) => VARIABLE.test(w))) return { kind: 'skip', why: 'uses ${…} variables the host expands; wrap cannot start it to draft its manifest' };
  return { kind: 'stdio', command: value.command, args: args as string[], env: value.env as Record<string, string> | undefined, cwd: value.cwd as string | undefined };
}

/**
 * A remote entry (`url`, Windsurf's `serverUrl`; `headers`): wrapped when the gate can speak to it
 * as the host would. Nothing here echoes the URL or a header value: both may hold credentials.
 */
function classifyRemote(value: Record<string, unknown>): Classified {
  const skip = (why: string): Classified => ({ kind: 'skip', remote: true, why: `a remote (url) server: ${why}` });
  if (value.type === 'sse') return skip('"type": "sse" is the older HTTP+SSE transport; the gate speaks Streamable HTTP only');
  if (value.type !== undefined && !(typeof value.type === 'string' && STREAMABLE.has(value.type))) return skip('its "type" is not a Streamable HTTP one');
  if (value.url !== undefined && value.serverUrl !== undefined) return skip('both "url" and "serverUrl"; hosts differ on which one counts');
  const key = value.url !== undefined ? 'url' : 'serverUrl';
  const text = value[key];
  if (typeof text !== 'string') return skip(`no "${key}" string`);
  if (value.command !== undefined) return skip(`both "command" and "${key}"`);
  const headers: [string, string][] = [];
  if (value.headers !== undefined) {
    if (!isObj(value.headers) || !Object.values(value.headers).every((v) => typeof v === 'string')) return skip('"headers" is not an object of strings');
    for (const [n, v] of Object.entries(value.headers as Record<string, string>)) headers.push([n, v]);
  }
  if (VARIABLE.test(text) || headers.some(([n, v]) => VARIABLE.test(n) || VARIABLE.test(v)))
    return skip('uses ${…} variables the host expands (inputs, env); wrap cannot reach it as the host does: gate it by hand with mcp-proxy --upstream-url and --upstream-header-file');
  let url: URL;
  try {
    url = parseUpstreamUrl(text);
    for (const [n, v] of headers) parseHeaderLine(`${n}: ${v}`, `header ${JSON.stringify(n)}`);
    checkUnique(headers, '"headers"');
  } catch (e) {
    if (!(e instanceof UpstreamHeaderError)) throw e;
    return skip(e.message.replace(/^--upstream-url/, 'its URL').replace(/pass them with --upstream-header/, 'move them to "headers"'));
  }
  return { kind: 'remote', url, headers: headers.map(([n, v]) => [n, v.trim()]), keys: { url: key, type: value.type !== undefined } };
}

/** The server folder a gate entry names (`… mcp-proxy --server NAME … (-- … | --upstream-url …)`), if it is one. */
export function gateServerOf(command: string, args: string[]): string | undefined {
  const dash = args.indexOf('--');
  const own = dash >= 0 ? args.slice(0, dash) : args;
  const i = own.indexOf('mcp-proxy');
  const s = own.indexOf('--server');
  // The original upstream follows: a command after --, or a remote one's --upstream-url.
  if (i < 0 || s < i || s + 1 >= own.length || (dash < 0 && !own.includes('--upstream-url'))) return undefined;
  void command;
  return own[s + 1];
}

/**
 * Where a gate entry's mode sits: the one `--mode VALUE` among the gate's own args (after
 * mcp-proxy, before --). Undefined when there is none (mcp-proxy then enforces), or more than one
 * or a `--mode=VALUE` (not how wrap writes it).
 */
export function gateModeOf(args: string[]): { mode: string; at: number } | undefined {
  const dash = args.indexOf('--');
  const own = dash >= 0 ? args.slice(0, dash) : args;
  const i = own.indexOf('mcp-proxy');
  if (i < 0) return undefined;
  const hits = own.flatMap((a, k) => (k > i && (a === '--mode' || a.startsWith('--mode=')) ? [k] : []));
  if (hits.length !== 1 || own[hits[0]] !== '--mode' || hits[0] + 1 >= own.length) return undefined;
  return { mode: own[hits[0] + 1], at: hits[0] + 1 };
}

/** The text with one element of server NAME's args set; nothing else in the file changes. */
export function setArg(text: string, at: string[], name: string, index: number, value: string): string {
  return applyEdits(text, modify(text, [...at, name, 'args', index], value, { formattingOptions: formatOf(text) }));
}

export interface Format {
  insertSpaces: boolean;
  tabSize: number;
  eol: string;
}

/** The file's own indentation and line ends, for the lines an edit adds. */
export function formatOf(text: string): Format {
  const eol = text.includes('\r\n') ? '\r\n' : '\n';
  const m = /\n([ \t]+)\S/.exec(text);
  if (m && m[1].startsWith('\t')) return { insertSpaces: false, tabSize: 1, eol };
  return { insertSpaces: true, tabSize: m ? m[1].length : 2, eol };
}

/** The text with server NAME's command and args set; nothing else in the file changes. */
export function setCommand(text: string, at: string[], name: string, command: string, args: string[]): string {
  const formattingOptions = formatOf(text);
  let out = applyEdits(text, modify(text, [...at, name, 'command'], command, { formattingOptions }));
  out = applyEdits(out, modify(out, [...at, name, 'args'], args, { formattingOptions }));
  return out;
}

/**
 * The text with each of server NAME's env variables that `rename` maps moved to its new name,
 * value kept; nothing else in the file changes.
 */
export function renameEnv(text: string, at: string[], name: string, env: Record<string, string>, rename: (k: string) => string | undefined): string {
  const formattingOptions = formatOf(text);
  let out = text;
  for (const [k, v] of Object.entries(env)) {
    const to = rename(k);
    if (to === undefined) continue;
    out = applyEdits(out, modify(out, [...at, name, 'env', k], undefined, { formattingOptions }));
    out = applyEdits(out, modify(out, [...at, name, 'env', to], v, { formattingOptions }));
  }
  return out;
}

/**
 * The text with remote server NAME turned into a command entry: its URL and headers removed
 * (the headers now live in a 0600 file of the home), "type" set to "stdio" where the entry has
 * one, the command and args set; every other key stays.
 */
export function setRemoteCommand(text: string, at: string[], name: string, keys: RemoteKeys, command: string, args: string[]): string {
  const formattingOptions = formatOf(text);
  let out = text;
  for (const k of [keys.url, 'headers']) out = applyEdits(out, modify(out, [...at, name, k], undefined, { formattingOptions }));
  if (keys.type) out = applyEdits(out, modify(out, [...at, name, 'type'], 'stdio', { formattingOptions }));
  return setCommand(out, at, name, command, args);
}

/** The text with server NAME's whole entry replaced by `entryText`, byte for byte. */
export function replaceEntry(text: string, at: string[], name: string, entryText: string): string {
  const root = parseTree(text, [], { allowTrailingComma: true });
  const node = root && findNodeAtLocation(root, [...at, name]);
  if (!node) throw new ConfigError(`server ${JSON.stringify(name)} is no longer in the file`);
  return text.slice(0, node.offset) + entryText + text.slice(node.offset + node.length);
}
