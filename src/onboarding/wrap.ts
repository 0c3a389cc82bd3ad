// cloakpipe wrap / unwrap over one host config file (onboarding.md): per stdio server, a drafted
// manifest and policy in the home's servers/NAME/, and the entry's command and args rewritten to
// run the gate in front of the original command (env, cwd and every other key untouched). What
// unwrap needs to put the entry back byte for byte is kept in servers/NAME/wrapped.json, written
// before the config is replaced; the config is backed up and replaced atomically.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { createScanner, parse as parseJsonc, SyntaxKind } from 'jsonc-parser';
import { basename, isAbsolute, join, resolve } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { atomicWrite, realTarget } from '../util/atomic-write.js';
import { readConfig, removeLeftovers, replaceConfig } from './config-file.js';
import { backup } from './backup.js';
import { unifiedDiff } from '../util/text-diff.js';
import { checkDraftLoads, draftFromTools, draftSource, shownUrl } from './draft.js';
import { listServerTools, ServerError } from './list-tools.js';
import { classify, ConfigError, gateModeOf, parseConfig, renameEnv, replaceEntry, setArg, setCommand, setRemoteCommand, type ConfigEntry } from './host-config.js';
import { loadsIntoGate, UPSTREAM_ONLY } from './upstream-only-env.js';
import { headerFileText } from '../doors/upstream/headers.js';
import type { HostConfig } from './hosts.js';
import { HEADERS_FILE, serverFiles, serverFolderName, ServerNameError } from './server-home.js';

export interface WrapOptions {
  homeDir: string;
  /** The gate's own command: an absolute node, its Node options and the CLI's main.js; `flags` go after mcp-proxy (--home when not the default). */
  gate: {
    command: string;
    args: string[];
    flags: string[];
    /** The flags a gate command line gives (after mcp-proxy, before --), read as mcp-proxy reads them; throws (with a message naming flags only) where it would refuse them. */
    readFlags: (argv: string[]) => { name: string; value?: string }[];
  };
  mode: 'shadow' | 'enforce';
  /** --mode was given: an entry already wrapped in the other mode is switched to it (ADR 057); else it keeps its mode. */
  modeAsked?: boolean;
  only?: Set<string>;
  dryRun: boolean;
  timeoutMs: number;
  /** --trust-project: a server of a project's own config may be started to draft it (ADR 118). */
  trustProject?: boolean;
  say: (line: string) => void;
  /** The dry run's diff. */
  out: (text: string) => void;
}

export interface FileResult {
  /** Servers left as they were because something went wrong (not notes such as remote entries). */
  failed: number;
  changed: boolean;
  /** The file exists. */
  found?: boolean;
}

/** What a server folder stands for: a command, or a URL with a digest of its headers (never the values). */
type Upstream = { command: string; args: string[] } | { url: string; headers: string };

interface Record_ {
  version: 1;
  name: string;
  upstream: Upstream;
  entries: Record<string, { original: string; wrapped: unknown }>;
}

/** Equal as JSON values (the parser's objects have no prototype; a record's do). */
const sameJson = (a: unknown, b: unknown) => isDeepStrictEqual(JSON.parse(JSON.stringify(a)), JSON.parse(JSON.stringify(b)));

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A gate entry's args, when it has a list of strings. */
const argsOf = (v: unknown): string[] | undefined => (isObj(v) && Array.isArray(v.args) && v.args.every((a) => typeof a === 'string') ? (v.args as string[]) : undefined);

/**
 * The entry's value with its gate mode blanked: an entry that differs from its record only in
 * --mode shadow|enforce is still the one wrap wrote (switched, by wrap or by hand; ADR 057).
 */
function modeless(value: unknown): unknown {
  const v = JSON.parse(JSON.stringify(value)) as unknown;
  const args = argsOf(v);
  const m = args && gateModeOf(args);
  if (m && (m.mode === 'shadow' || m.mode === 'enforce')) args![m.at] = '';
  return v;
}

/** The entry is the one its record says wrap wrote, whatever its mode. */
const sameWrap = (value: unknown, recorded: unknown) => sameJson(modeless(value), modeless(recorded));

/**
 * How a wrapped entry starts its gate, against how this cloakpipe would: another node, other
 * Node options (V8 reads them only at start, ADR 067) or another main.js. Wrap does not rewrite
 * a wrapped entry's start (ADR 057); it says what differs, naming only its own values.
 */
function startDiffers(value: unknown, gate: WrapOptions['gate']): string[] {
  const args = argsOf(value) ?? [];
  const start = args.slice(0, Math.max(0, args.indexOf('mcp-proxy')));
  const options = gate.args.slice(0, -1);
  const differs: string[] = [];
  if (!isObj(value) || value.command !== gate.command) differs.push(`another node (this cloakpipe runs ${gate.command})`);
  if (!isDeepStrictEqual(start.slice(0, -1), options)) differs.push(options.length > 0 ? `other Node options (this cloakpipe writes ${options.join(' ')})` : 'Node options this cloakpipe does not write');
  if (start.at(-1) !== gate.args.at(-1)) differs.push(`another main.js (this cloakpipe's is ${gate.args.at(-1)})`);
  return differs;
}

/** Node options a gate's start may carry (ADR 067's young generation): nothing that loads code. */
const GATE_NODE_OPTION = /^--(max|min)-semi-space-size=[0-9]+$/;

/**
 * The entry starts this cloakpipe's gate: `cloakpipe mcp-proxy …` (PATH), or a node running this
 * cloakpipe's main.js with no option but the young generation's. Its shape alone (mcp-proxy,
 * --server, --) is anyone's: `sh -c SCRIPT mcp-proxy --server x -- …` runs SCRIPT, ungated.
 */
function startsThisGate(value: unknown, gate: WrapOptions['gate']): boolean {
  const args = argsOf(value) ?? [];
  const i = args.indexOf('mcp-proxy');
  if (!isObj(value) || i < 0) return false;
  // NODE_OPTIONS (LD_PRELOAD, …) in its environment loads code into the gate's node before cloakpipe's own.
  if (gateLoadsFromEnv(value).length > 0) return false;
  if (value.command === 'cloakpipe') return i === 0;
  const start = args.slice(0, i);
  return (value.command === gate.command || value.command === 'node') && start.at(-1) === gate.args.at(-1) && start.slice(0, -1).every((a) => GATE_NODE_OPTION.test(a));
}

/** The variables of an entry's env that its process loads code or trust from at start (upstream-only-env.ts). */
const gateLoadsFromEnv = (value: unknown): string[] => (isObj(value) && isObj(value.env) ? Object.keys(value.env).filter(loadsIntoGate) : []);

/**
 * The CLOAKPIPE_* variables of an entry's env: the host sets them on the gate it starts, which
 * takes CLOAKPIPE_HOME as its home (key, ledger, servers/' policy), CLOAKPIPE_STORE as its store.
 * The upstream-only ones wrap writes are the server's.
 */
const gateOwnEnv = (value: unknown): string[] =>
  isObj(value) && isObj(value.env) ? Object.keys(value.env).filter((k) => k.toUpperCase().startsWith('CLOAKPIPE_') && !k.startsWith(UPSTREAM_ONLY)) : [];

/** The gate's flags wrap writes, each with its value (the header one may repeat). */
const WRAP_FLAGS = new Set(['--server', '--mode', '--home', '--upstream-url', '--upstream-header-file', '--upstream-header']);

/**
 * What a gate entry this home has no record of would start its gate with that wrap does not set
 * up: another or no --home (its calls decided by another home's servers/, or none), any other
 * flag (--manifest, --policy, --config, --list-undeclared, …), a CLOAKPIPE_* of its env, or a
 * command line the gate refuses (it would not start). Its flags are read by mcp-proxy's own parser
 * (gate.readFlags), so `--home=DIR`, a flag given twice or a value that looks like a flag mean here
 * what they mean to the gate. Named by flag or variable, never by value. Empty: the gate decides
 * with this home's servers/NAME.
 */
function setUpOtherwise(value: unknown, homeDir: string, gate: WrapOptions['gate']): string[] {
  const out = gateOwnEnv(value).map((k) => `${k} in its env`);
  const args = argsOf(value) ?? [];
  const dash = args.indexOf('--');
  let flags;
  try {
    flags = gate.readFlags(args.slice(args.indexOf('mcp-proxy') + 1, dash >= 0 ? dash : args.length));
  } catch (e) {
    return [...out, `a command line it refuses (${(e as Error).message})`];
  }
  const seen = new Set<string>();
  let home: string | undefined;
  for (const { name, value: v } of flags) {
    const flag = `--${name}`;
    if (!WRAP_FLAGS.has(flag)) {
      out.push(flag);
      continue;
    }
    // The gate takes the last of a flag given twice; wrap writes each once.
    if (seen.has(flag) && flag !== '--upstream-header') out.push(`${flag} twice`);
    seen.add(flag);
    if (flag === '--home') home = v;
  }
  // Without --home the gate takes the host's $CLOAKPIPE_HOME or ~/.cloakpipe: this home only when it is the default one.
  if (home === undefined ? gate.flags.includes('--home') : !isAbsolute(home) || resolve(home) !== homeDir) out.push(home === undefined ? 'no --home' : 'another --home');
  return [...new Set(out)];
}

/** Why the gate of `--server NAME` would not start (no server name; no manifest or policy in the home), or undefined. */
function serverMissing(homeDir: string, name: string): string | undefined {
  let files;
  try {
    files = serverFiles(homeDir, name);
  } catch (e) {
    if (!(e instanceof ServerNameError)) throw e;
    return e.message;
  }
  const lacks = [files.manifest, files.policy].filter((p) => !existsSync(p)).map((p) => basename(p));
  return lacks.length > 0 ? `this home holds no ${lacks.join(' or ')} in servers/${name}` : undefined;
}

/** Said of an entry wrap wrote whose gate this cloakpipe would start otherwise: how to move it. */
function startNote(value: unknown, gate: WrapOptions['gate']): string {
  const differs = startDiffers(value, gate);
  return differs.length > 0 ? `; its gate starts with ${differs.join(', ')}: unwrap it and wrap it again to start it as this cloakpipe does` : '';
}

/**
 * The values a diff must not show: every string under "env" and "headers" of every entry
 * (context lines show the neighbours too). Matched as whole JSON strings (redactValues).
 */
function entrySecrets(entries: ConfigEntry[]): Set<string> {
  const out = new Set<string>();
  for (const e of entries) {
    if (!isObj(e.value)) continue;
    for (const k of ['env', 'headers']) {
      const o = e.value[k];
      if (isObj(o)) for (const v of Object.values(o)) if (typeof v === 'string' && v !== '') out.add(v);
    }
    // Every entry's URL, also of one left as is: the diff shows it as context around another.
    for (const k of ['url', 'serverUrl']) if (mayHoldKey(e.value[k])) out.add(e.value[k] as string);
    for (const a of serverArgs(e.value)) out.add(a);
  }
  return out;
}

/** A flag's name alone (`-y`, `--stdio`): shown; a value (`--key=…`, a token, a path) is not. */
const FLAG_NAME = /^--?[A-Za-z][A-Za-z0-9-]*$/;

/**
 * The server's own args of an entry, which may hold a key (`--api-key sk-…`, a URL with a
 * token): every arg of an entry as the user wrote it, and of a gate entry those after its
 * upstream command (and its --upstream-url). The gate's own words and flag names stay readable.
 */
function serverArgs(value: Record<string, unknown>): string[] {
  const args = argsOf(value);
  if (!args) return [];
  let words = args;
  if (classify(value).kind === 'wrapped') {
    const dash = args.indexOf('--');
    const own = dash >= 0 ? args.slice(0, dash) : args;
    const url = own.indexOf('--upstream-url');
    words = [...(url >= 0 && url + 1 < own.length ? [own[url + 1]] : []), ...(dash >= 0 ? args.slice(dash + 2) : [])];
  }
  return words.filter((w) => w !== '' && !FLAG_NAME.test(w));
}

/** A remote URL shown only when it is an origin alone: its credentials, path or query may hold a key. */
function mayHoldKey(u: unknown): boolean {
  if (typeof u !== 'string') return false;
  if (!URL.canParse(u)) return u !== '';
  const url = new URL(u);
  return url.href !== `${url.origin}/`;
}

/** Each JSON string in the diff whose value is one of `values` shown as "<redacted>". */
function redactValues(diff: string, values: Set<string>): string {
  if (values.size === 0) return diff;
  return diff.replace(/"(?:[^"\\\n]|\\.)*"/g, (lit) => {
    try {
      return values.has(JSON.parse(lit) as string) ? '"<redacted>"' : lit;
    } catch {
      return lit;
    }
  });
}

/** A config as messages name it: its path, and where in it for Claude Code's projects[DIR]. */
export const configLabel = (cfg: HostConfig) => `${cfg.path}${cfg.under ? ` (${cfg.under.join(' → ')})` : ''}`;

/** The server names in a config (what --server is checked against); undefined when there is no file. ConfigError when it cannot be read as the host reads it. */
export function serverNames(cfg: HostConfig): string[] | undefined {
  const read = readConfig(cfg);
  if (read === undefined) return undefined;
  return parseConfig(cfg, read.text)?.entries.map((e) => e.name) ?? [];
}

function readRecord(path: string): Record_ | undefined {
  if (!existsSync(path)) return undefined;
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as Record_;
  } catch (e) {
    // V8's message quotes the text near the fault, and a record holds the entries' env values.
    if (e instanceof SyntaxError) throw new SyntaxError(`${path} is not valid JSON`);
    throw e;
  }
}

/** A digest of a remote entry's headers: tells two entries apart without keeping a value. */
function headersDigest(headers: [string, string][]): string {
  return createHash('sha256').update(JSON.stringify(headers.map(([n, v]) => [n.toLowerCase(), v]).sort())).digest('hex');
}

/** The header values and remote URL of an entry's original text (to keep them out of the unwrap diff). */
function headerValuesOf(entryText: string): string[] {
  const v = parseJsonc(entryText) as { headers?: unknown; url?: unknown; serverUrl?: unknown } | undefined;
  const urls = [v?.url, v?.serverUrl].filter((u): u is string => mayHoldKey(u));
  return [...urls, ...(v && typeof v.headers === 'object' && v.headers !== null ? Object.values(v.headers).filter((x): x is string => typeof x === 'string') : [])];
}

/** The diff with every header value replaced (as it appears in JSON text). */
function redact(diff: string, secrets: string[]): string {
  let out = diff;
  for (const s of secrets.filter((x) => x.trim() !== '').sort((a, b) => b.length - a.length)) out = out.split(JSON.stringify(s.trim()).slice(1, -1)).join('<redacted>');
  return out;
}

/**
 * A JSONC config's comments as `// <redacted>` and `/* <redacted> *\/`, their line breaks kept (so
 * the diff's line numbers are the file's): a comment beside an entry may hold what its redacted
 * values hold (`// token: sk-…`). Edits never touch comments, so both sides of a diff match.
 */
function commentsRedacted(text: string): string {
  const scan = createScanner(text, false);
  let out = '';
  let from = 0;
  for (let kind = scan.scan(); kind !== SyntaxKind.EOF; kind = scan.scan()) {
    if (kind !== SyntaxKind.LineCommentTrivia && kind !== SyntaxKind.BlockCommentTrivia) continue;
    const at = scan.getTokenOffset();
    const breaks = (text.slice(at, at + scan.getTokenLength()).match(/\r?\n/g) ?? []).join('');
    out += text.slice(from, at) + (kind === SyntaxKind.LineCommentTrivia ? '// <redacted>' : `/* <redacted>${breaks} */`);
    from = at + scan.getTokenLength();
  }
  return out + text.slice(from);
}

/** The dry run's diff, with nothing in it that may hold a credential: values, args, URLs, header values, comments. */
function shownDiff(cfg: HostConfig, before: string, after: string, what: string, secrets: string[], entries: ConfigEntry[]): string {
  const diff = unifiedDiff(commentsRedacted(before), commentsRedacted(after), cfg.path, `${cfg.path} (${what})`);
  return redactValues(redact(diff, secrets), entrySecrets(entries));
}

/**
 * A write the file system refused (a full disk, a read-only or vanished folder), as a ConfigError
 * that says what became of the config: the command names it and goes on to the next config.
 * Anything else (ours) goes on as it is.
 */
function refusedWrite(e: unknown, what: string): unknown {
  if (e instanceof ConfigError) return e;
  return isSystemError(e) ? new ConfigError(`${what}: ${e.message}`) : e;
}

/** An error the system gave (ENOSPC, EACCES, …): the user's to mend, named; any other is a defect. */
export function isSystemError(e: unknown): e is NodeJS.ErrnoException {
  const code = (e as NodeJS.ErrnoException | null)?.code;
  return e instanceof Error && typeof code === 'string' && /^E[A-Z0-9]+$/.test(code);
}

/** Copies of the config a killed wrap or unwrap left beside it: removed (named in a dry run). */
function sayLeftovers(cfg: HostConfig, o: { dryRun: boolean; say: (line: string) => void }): void {
  for (const p of removeLeftovers(cfg, o.dryRun))
    o.say(`${cfg.path}: ${o.dryRun ? 'would remove' : 'removed'} ${p}, a copy of the config left by a wrap or unwrap that was stopped while replacing it`);
}

export async function wrapFile(cfg: HostConfig, o: WrapOptions): Promise<FileResult> {
  sayLeftovers(cfg, o);
  const read = readConfig(cfg);
  if (read === undefined) return { failed: 0, changed: false, found: false };
  const parsed = parseConfig(cfg, read.text); // ConfigError: named with line and column, file untouched
  if (!parsed) return o.say(`${cfg.path}: no MCP servers`), { failed: 0, changed: false };
  const text = parsed.text; // without a byte order mark, which the write puts back
  const configKey = realTarget(cfg.path) + (cfg.under ? ` ${JSON.stringify(cfg.under)}` : '');
  let next = text;
  let failed = 0;
  /** The records to write, by path: read once, so two entries of one folder never overwrite each other's change. */
  const records = new Map<string, Record_>();
  const recordAt = (path: string) => (records.has(path) ? records.get(path) : readRecord(path));
  let wrappedCount = 0;
  let switched = 0;
  const drafts: { dir: string; manifestPath: string; policyPath: string; manifest: string; policy: string }[] = [];
  const headerFiles: { dir: string; path: string; text: string }[] = [];
  /** Header values: never printed, not even in the dry run's diff. */
  const secrets: string[] = [];
  for (const e of parsed.entries) {
    if (o.only && !o.only.has(e.name)) continue;
    const c = classify(e.value);
    const label = `${configLabel(cfg)}: ${JSON.stringify(e.name)}`;
    if (c.kind === 'wrapped') {
      const now = gateModeOf(argsOf(e.value)!);
      // Only an entry its record holds can be unwrapped and wrapped again: only then the note.
      // A record that cannot be read only loses the note (the entry is left as it is anyway).
      let recorded: { wrapped: unknown } | undefined;
      try {
        recorded = recordAt(serverFiles(o.homeDir, c.server).wrapped)?.entries[configKey];
      } catch {
        recorded = undefined;
      }
      const ours = recorded !== undefined && sameWrap(e.value, recorded.wrapped);
      // A gate entry is one this home wrote, or one that starts this cloakpipe (wrapped by hand).
      if (!ours && !startsThisGate(e.value, o.gate)) {
        o.say(`${label}: left as is: it names the gate (servers/${c.server}) but does not start this cloakpipe, and this home has no record of wrapping it: check its command; it may run ungated`);
        failed++;
        continue;
      }
      // Wrapped by hand (or by an older wrap, for the env): whether this home's servers/ decides its calls.
      const otherwise = ours ? gateOwnEnv(e.value).map((k) => `${k} in its env`) : setUpOtherwise(e.value, o.homeDir, o.gate);
      if (otherwise.length > 0) {
        o.say(`${label}: left as is: its gate would start with ${otherwise.join(', ')}, which wrap does not set up: another home, manifest, policy or store may decide its calls (servers/${c.server} of this home does not); check the entry, remove those and wrap it again`);
        failed++;
        continue;
      }
      // Written by a wrap that left them in the gate's env: its node takes them at every start.
      const loads = gateLoadsFromEnv(e.value);
      if (loads.length > 0) {
        o.say(`${label}: its gate's own process takes ${loads.join(', ')} from its env (they load code into the gate or change what it trusts): unwrap it and wrap it again, so that only the server gets them`);
        failed++;
        continue;
      }
      // A gate that cannot find its manifest and policy does not start: nothing is gated there.
      const missing = serverMissing(o.homeDir, c.server);
      if (missing !== undefined) {
        o.say(`${label}: left as is, not protected: its gate would not start: ${missing}; unwrap it and wrap it again to draft it`);
        failed++;
        continue;
      }
      if (!o.modeAsked || now?.mode === o.mode) {
        const note = ours ? startNote(e.value, o.gate) : '';
        o.say(`${label}: already wrapped (servers/${c.server}${now ? `, ${now.mode} mode` : ''})${note}`);
        continue;
      }
      // Switched to the mode asked for, only when the entry is the one wrap wrote (its record
      // says so, whatever its mode): anything else is left, named, exit 1 (ADR 057).
      const left = (why: string) => (o.say(`${label}: left ${now ? `in ${now.mode} mode` : 'as is'}, not switched to ${o.mode}: ${why}`), failed++);
      let files;
      let record;
      try {
        files = serverFiles(o.homeDir, c.server);
        record = recordAt(files.wrapped);
      } catch (err) {
        if (!(err instanceof ServerNameError || err instanceof SyntaxError)) throw err;
        left(err.message);
        continue;
      }
      const entry = record?.entries[configKey];
      if (!entry) {
        left(`${files.wrapped} has no record of how it was wrapped (by hand, or with another --home?); set its --mode by hand`);
        continue;
      }
      if (!now || !sameWrap(e.value, entry.wrapped)) {
        left(`the entry changed since it was wrapped; restore it from the backup in ${join(o.homeDir, 'backups')} and wrap it again, or set its --mode by hand`);
        continue;
      }
      next = setArg(next, parsed.at, e.name, now.at, o.mode);
      const after = parseConfig(cfg, next)!.entries.find((x) => x.name === e.name)!;
      const c2 = classify(after.value);
      if (c2.kind !== 'wrapped' || c2.server !== c.server || gateModeOf(argsOf(after.value)!)?.mode !== o.mode || !sameWrap(after.value, entry.wrapped))
        throw new ConfigError(`${cfg.path}: internal error: ${JSON.stringify(e.name)} not switched as meant; left as is`);
      entry.wrapped = JSON.parse(JSON.stringify(after.value));
      records.set(files.wrapped, record!);
      switched++;
      o.say(`${label}: ${o.dryRun ? 'would switch' : 'switched'} from ${now.mode} to ${o.mode} mode (servers/${c.server})${startNote(after.value, o.gate)}`);
      continue;
    }
    if (c.kind === 'skip') {
      o.say(`${label}: left as is: ${c.why}`);
      if (!c.remote) failed++;
      continue;
    }
    // The host sets env on the gate it starts: CLOAKPIPE_HOME there would choose another home
    // (its key, ledger and the policy of its servers/), CLOAKPIPE_STORE another store. The server
    // never got them (upstreamEnv), so they only ever meant the gate.
    const own = gateOwnEnv(e.value);
    if (own.length > 0) {
      o.say(`${label}: left as is: its env sets ${own.join(', ')}, which the gate started in its place would take as its own (another home, store or key): remove it, then wrap`);
      failed++;
      continue;
    }
    const folder = serverFolderName(e.name);
    const files = serverFiles(o.homeDir, folder);
    const prior = recordAt(files.wrapped);
    const upstream: Upstream = c.kind === 'stdio' ? { command: c.command, args: c.args } : { url: c.url.href, headers: headersDigest(c.headers) };
    // Another entry of this name with another command (or URL) has the folder: two servers, one
    // name. A folder no other entry uses (unwrapped since, then edited) is this server's: its
    // kept manifest is named for review.
    const moved = prior !== undefined && !isDeepStrictEqual(prior.upstream, upstream);
    if (moved && Object.keys(prior.entries).some((k) => k !== configKey)) {
      o.say(`${label}: left as is: servers/${folder} belongs to another server of that name with another ${c.kind === 'stdio' ? 'command' : 'URL or headers'}; rename one of them`);
      failed++;
      continue;
    }
    // Drafting starts the server (or asks its URL): a command a cloned repository chose runs
    // only when the user said they read it (ADR 118). One drafted before is wrapped without
    // asking while it is the command (or URL) the user read then; a changed one asks again. The
    // dry run says what the run would do.
    if (cfg.within !== undefined && !o.trustProject && (moved || !existsSync(files.manifest))) {
      const what = c.kind === 'stdio' ? 'command' : 'URL or headers';
      const why = moved ? `whose ${what} changed since servers/${folder} was drafted` : 'which wrap would start to read its tools';
      o.say(`${label}: left as is: a server of this project's own config, ${why}; the repository chose its ${what}: read the entry, then wrap with --trust-project`);
      failed++;
      continue;
    }
    // A remote entry's headers move to a 0600 file of the home: off the host's config and off
    // the command line (`ps`); the entry names the file.
    const upstreamArgs = c.kind === 'stdio' ? ['--', c.command, ...c.args] : ['--upstream-url', c.url.href, ...(c.headers.length ? ['--upstream-header-file', files.headers] : [])];
    const wrappedArgs = [...o.gate.args, 'mcp-proxy', '--server', folder, '--mode', o.mode, ...o.gate.flags, ...upstreamArgs];
    if (c.kind === 'remote') {
      if (c.url.search) o.say(`${label}: its URL has a query, which stays on the gate's command line (ps shows it): if it holds a key, move it to a header`);
      for (const [, v] of c.headers) secrets.push(v);
      // Its path and query are not shown either (shownUrl): some services put a key there.
      if (shownUrl(c.url) !== c.url.origin) secrets.push(c.url.href, String((e.value as Record<string, unknown>)[c.keys.url]));
      if (c.headers.length) headerFiles.push({ dir: files.dir, path: files.headers, text: headerFileText(c.headers) });
    }
    if (!o.dryRun && !existsSync(files.manifest)) {
      let listed;
      try {
        listed = await listServerTools(c.kind === 'stdio' ? { command: c.command, args: c.args, env: c.env, cwd: c.cwd } : { url: c.url, headers: c.headers }, o.timeoutMs);
      } catch (err) {
        if (!(err instanceof ServerError)) throw err;
        o.say(`${label}: left as is: ${err.message}`);
        failed++;
        if (c.kind === 'remote' && c.headers.length) headerFiles.pop();
        continue;
      }
      const draft = draftFromTools(listed.tools, { release: listed.release, source: draftSource(c) });
      checkDraftLoads(draft.manifest); // a draft that does not load is our fault: stop
      drafts.push({ dir: files.dir, manifestPath: files.manifest, policyPath: files.policy, manifest: draft.manifest, policy: draft.policy });
      o.say(`${label}: drafted ${draft.declared.length} tools → ${files.manifest} (review it, then --mode enforce)`);
      for (const s of draft.skipped) o.say(`${label}: not declared: ${JSON.stringify(s.name)}: ${s.why}`);
    } else if (!o.dryRun) {
      o.say(`${label}: keeping ${files.manifest}${moved ? `, drafted when the server had another ${c.kind === 'stdio' ? 'command' : 'URL or headers'}: review it against this one` : ''}`);
    }
    next = c.kind === 'stdio' ? setCommand(next, parsed.at, e.name, o.gate.command, wrappedArgs) : setRemoteCommand(next, parsed.at, e.name, c.keys, o.gate.command, wrappedArgs);
    // The host sets env on the process it starts, now the gate: what would load into it goes under a name only the gate reads, for the server alone.
    const env = isObj(e.value) && isObj(e.value.env) ? (e.value.env as Record<string, string>) : {};
    next = renameEnv(next, parsed.at, e.name, env, (k) => (loadsIntoGate(k) ? UPSTREAM_ONLY + k : undefined));
    const after = parseConfig(cfg, next)!.entries.find((x) => x.name === e.name)!;
    const record: Record_ = prior ? { ...prior, upstream } : { version: 1, name: e.name, upstream, entries: {} };
    record.entries[configKey] = { original: e.text, wrapped: JSON.parse(JSON.stringify(after.value)) };
    records.set(files.wrapped, record);
    wrappedCount++;
    if (o.dryRun) o.say(`${label}: would wrap (servers/${folder}, ${o.mode})`);
  }
  if (next === text) return { failed, changed: false };
  // The rewritten file must read back as the host reads it, with every other entry as it was.
  const check = parseConfig(cfg, next)!;
  for (const e of parsed.entries) {
    const now = check.entries.find((x) => x.name === e.name);
    if (!now) throw new ConfigError(`${cfg.path}: internal error: ${JSON.stringify(e.name)} lost in the rewrite; left as is`);
  }
  if (o.dryRun) return o.out(shownDiff(cfg, text, next, 'wrapped', secrets, [...parsed.entries, ...check.entries])), { failed, changed: true };
  let saved: string;
  try {
    for (const h of headerFiles) {
      mkdirSync(h.dir, { recursive: true, mode: 0o700 });
      atomicWrite(h.path, h.text, 0o600);
    }
    for (const d of drafts) {
      mkdirSync(d.dir, { recursive: true, mode: 0o700 });
      // The manifest last: a later wrap keeps a server's manifest as drafted, so it must never
      // be there without its policy (a full disk between the two).
      atomicWrite(d.policyPath, d.policy, 0o600);
      atomicWrite(d.manifestPath, d.manifest, 0o600);
    }
    for (const [path, record] of records) {
      mkdirSync(join(path, '..'), { recursive: true, mode: 0o700 });
      atomicWrite(path, JSON.stringify(record, null, 2) + '\n', 0o600);
    }
    saved = backup(o.homeDir, realTarget(cfg.path), read.text);
    replaceConfig(cfg, read, parsed.bom + next);
  } catch (e) {
    // The config is replaced last, atomically: until then it is as it was.
    throw refusedWrite(e, `${cfg.path}: left as is`);
  }
  const did = [...(wrappedCount ? [`wrapped ${wrappedCount} server(s)`] : []), ...(switched ? [`switched ${switched} to ${o.mode} mode`] : [])];
  o.say(`${cfg.path}: ${did.join(', ')}; the previous file is ${saved}`);
  return { failed, changed: true };
}

export async function unwrapFile(cfg: HostConfig, o: Omit<WrapOptions, 'gate' | 'mode' | 'timeoutMs'>): Promise<FileResult> {
  sayLeftovers(cfg, o);
  const read = readConfig(cfg);
  if (read === undefined) return { failed: 0, changed: false, found: false };
  const parsed = parseConfig(cfg, read.text);
  if (!parsed) return { failed: 0, changed: false };
  const text = parsed.text;
  const configKey = realTarget(cfg.path) + (cfg.under ? ` ${JSON.stringify(cfg.under)}` : '');
  let next = text;
  let failed = 0;
  const done: { path: string; record: Record_ }[] = [];
  const secrets: string[] = [];
  for (const e of parsed.entries) {
    if (o.only && !o.only.has(e.name)) continue;
    const c = classify(e.value);
    const label = `${configLabel(cfg)}: ${JSON.stringify(e.name)}`;
    if (c.kind !== 'wrapped') {
      if (o.only) o.say(`${label}: not wrapped`);
      continue;
    }
    let files;
    let record;
    try {
      files = serverFiles(o.homeDir, c.server);
      record = readRecord(files.wrapped);
    } catch (err) {
      o.say(`${label}: left as is: ${(err as Error).message}`);
      failed++;
      continue;
    }
    const entry = record?.entries[configKey];
    if (!entry) {
      o.say(`${label}: left as is: no record of how it was wrapped in ${files.wrapped}`);
      failed++;
      continue;
    }
    // The host may have re-saved the file in its own layout: the entry's value is what must match.
    if (!sameWrap(e.value, entry.wrapped)) {
      o.say(`${label}: left as is: the entry changed since it was wrapped; restore it from the backup in ${join(o.homeDir, 'backups')}`);
      failed++;
      continue;
    }
    next = replaceEntry(next, parsed.at, e.name, entry.original);
    secrets.push(...headerValuesOf(entry.original));
    delete record!.entries[configKey];
    done.push({ path: files.wrapped, record: record! });
    o.say(`${label}: ${o.dryRun ? 'would restore' : 'restored'} the original entry`);
  }
  if (next === text) return { failed, changed: false };
  const check = parseConfig(cfg, next)!;
  if (o.dryRun) return o.out(shownDiff(cfg, text, next, 'unwrapped', secrets, [...parsed.entries, ...check.entries])), { failed, changed: true };
  let saved: string;
  try {
    saved = backup(o.homeDir, realTarget(cfg.path), read.text);
    replaceConfig(cfg, read, parsed.bom + next);
  } catch (e) {
    throw refusedWrite(e, `${cfg.path}: left as is`);
  }
  // After the config: a crash in between leaves a record that unwrap no longer needs, never a wrapped entry without one.
  try {
    for (const d of done) {
      atomicWrite(d.path, JSON.stringify(d.record, null, 2) + '\n', 0o600);
      // No entry uses the folder's header file any more: its credentials are back in the config only.
      if (Object.keys(d.record.entries).length === 0) rmSync(join(d.path, '..', HEADERS_FILE), { force: true });
    }
  } catch (e) {
    throw refusedWrite(e, `${cfg.path}: unwrapped (the previous file is ${saved}), but a record of the home was not updated; run unwrap again once it can be`);
  }
  o.say(`${cfg.path}: unwrapped ${done.length} server(s); the previous file is ${saved}`);
  return { failed, changed: true };
}
