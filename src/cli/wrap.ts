// cloakpipe wrap / unwrap: put the gate in front of the stdio servers in an agent host's MCP
// config, and take it away again (onboarding.md). The work is src/onboarding/wrap.ts.
import { existsSync, realpathSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { GATE_NODE_FLAGS } from './node-flags.js';
import { givenFlags, optionsHelp, parseFlags, suggest, timerDuration, UsageError, type Options } from './args.js';
import { OPTIONS as MCP_PROXY_OPTIONS } from './mcp-proxy.js';
import { resolveHome } from '../store/home.js';
import { checkHomeDir, HomeError } from '../home/open.js';
import { fileConfig, hostConfigs, HOSTS, type HostConfig, type HostId } from '../onboarding/hosts.js';
import { ConfigError } from '../onboarding/host-config.js';
import { configLabel, isSystemError, serverNames, unwrapFile, wrapFile } from '../onboarding/wrap.js';
import { HomeBusy, lockHome } from '../onboarding/home-lock.js';
import { visible, visibleLines } from './visible.js';

const WRAP_OPTIONS = {
  host: { type: 'string', multiple: true, arg: `${HOSTS.join('|')}|FILE`, help: "a host (its user and project configs) or a config file", defaultText: 'every host' },
  server: { type: 'string', multiple: true, arg: 'NAME', help: 'only this server (a name no config has is an error)', defaultText: 'every stdio server' },
  mode: { type: 'string', arg: 'shadow|enforce', help: 'the mode the gate runs in; an entry already wrapped is switched to it', defaultText: 'shadow; an entry already wrapped keeps its mode' },
  'dry-run': { type: 'boolean', help: 'print the diff; start nothing, write nothing' },
  timeout: { type: 'string', arg: 'DURATION', default: '30s', help: 'for each server to start and list its tools' },
  'trust-project': { type: 'boolean', help: "start the servers of this folder's own configs (./.mcp.json, ./.cursor/, ./.vscode/) to draft them: the repository chose their commands, read them first" },
  home: { type: 'string', arg: 'DIR', help: 'the gate home', defaultText: '$CLOAKPIPE_HOME or ~/.cloakpipe' },
} satisfies Options;

const UNWRAP_OPTIONS = {
  host: WRAP_OPTIONS.host,
  server: WRAP_OPTIONS.server,
  'dry-run': WRAP_OPTIONS['dry-run'],
  home: WRAP_OPTIONS.home,
} satisfies Options;

const WRAP_HELP = `usage: cloakpipe wrap [--host HOST|FILE]... [--server NAME]... [--mode shadow|enforce] [--trust-project] [--dry-run]

For each stdio server in the host's MCP config (user and project level), drafts a manifest and
policy into the home's servers/NAME/ (an existing manifest is kept), and rewrites the entry's
command and args to run \`cloakpipe mcp-proxy --server NAME\` in front of the original command.
env, cwd and every other key, their order, comments and indentation stay as they are. The old
file goes to the home's backups/ (0600), the new one replaces it atomically; wrapping twice
changes nothing. --mode switches an entry already wrapped to that mode, in place and atomically
like any wrap, when it is still the entry wrap wrote (else it is named and left); without --mode
it keeps its mode. An entry keeps the command line it was wrapped with; wrap names what differs
from the one it writes now (node, Node options, main.js): unwrap and wrap again to take it. A
--server that names no server in the configs searched is an error (exit 2, nothing written). A
remote entry ("url", Windsurf's "serverUrl"; Streamable HTTP) becomes
\`cloakpipe mcp-proxy --server NAME --upstream-url URL\`: its "headers" move to the home's
servers/NAME/upstream.headers (0600, named by --upstream-header-file), out of the host's config
and off the command line; "type" becomes "stdio". Entries with \${…} variables and "type": "sse"
(HTTP+SSE) are left. A server that does not start or list its tools in time is named and left as
it is. A config that is not valid JSON (JSONC for VS Code and
Cursor) is named with line and column and not touched. A project's config that is a symbolic
link, or sits in a linked folder, is named and left: name the file itself with --host FILE. A
server of a project's own config (./.mcp.json, ./.cursor/mcp.json, ./.vscode/mcp.json) is started
to draft it only with --trust-project: the folder's repository chose its command, and wrap would
run it; without it such a server is named and left (one already drafted is wrapped). An
entry that already runs the gate but that this home has no record of wrapping is "already
wrapped" only when it starts this cloakpipe with the flags wrap writes (--server, --mode, this
home) and no CLOAKPIPE_* in its env; else it is named and left. Exit 1 when a server or file was
left.

hosts: claude-desktop (claude_desktop_config.json), claude-code (~/.claude.json, its projects[CWD], ./.mcp.json),
cursor (~/.cursor/mcp.json, ./.cursor/mcp.json), vscode (user mcp.json, ./.vscode/mcp.json),
windsurf (~/.codeium/windsurf/mcp_config.json)

options:
${optionsHelp(WRAP_OPTIONS)}
  --help                          this text
`;

const UNWRAP_HELP = `usage: cloakpipe unwrap [--host HOST|FILE]... [--server NAME]... [--dry-run]

Puts back each wrapped entry exactly as it was before wrap, byte for byte. An entry changed since
it was wrapped (other than its --mode) is named and left (its original is in the home's backups/).
The drafted manifest and policy stay in servers/NAME/ for the next wrap. A --server that names no
server in the configs searched is an error (exit 2, nothing written).

options:
${optionsHelp(UNWRAP_OPTIONS)}
  --help                          this text
`;

function configs(hosts: string[] | undefined): HostConfig[] {
  if (!hosts || hosts.length === 0) return HOSTS.flatMap((h) => hostConfigs(h));
  return hosts.flatMap((h) => ((HOSTS as readonly string[]).includes(h) ? hostConfigs(h as HostId) : /[/\\.]/.test(h) ? [fileConfig(h)] : badHost(h)));
}

function badHost(h: string): never {
  throw new UsageError(`--host ${JSON.stringify(h)}: one of ${HOSTS.join(', ')}, or a config file path`);
}

export async function run(argv: string[], unwrap = false): Promise<number> {
  const name = unwrap ? 'unwrap' : 'wrap';
  const { values } = parseFlags(argv, unwrap ? UNWRAP_OPTIONS : WRAP_OPTIONS);
  if (values.help) return void process.stdout.write(unwrap ? UNWRAP_HELP : WRAP_HELP), 0;
  const v = values as { host?: string[]; server?: string[]; mode?: string; 'dry-run'?: boolean; timeout?: string; home?: string; 'trust-project'?: boolean };
  const mode = v.mode ?? 'shadow';
  const modeAsked = v.mode !== undefined;
  if (mode !== 'shadow' && mode !== 'enforce') throw new UsageError('--mode must be shadow or enforce');
  // It arms a timer per server: longer than a timer can wait would fire at once (timerDuration).
  const timeoutMs = unwrap ? 0 : timerDuration(v.timeout ?? '30s', '--timeout');
  const home = resolveHome(v.home);
  try {
    checkHomeDir(home);
  } catch (e) {
    if (!(e instanceof HomeError)) throw e;
    process.stderr.write(`cloakpipe ${name}: ${e.message}\n`);
    return 2;
  }
  const list = configs(v.host);
  // The gate as a GUI host must start it: absolute node, the gate's Node options and main.js, no
  // PATH lookup, no shell.
  const main = realpathSync(fileURLToPath(new URL('./main.js', import.meta.url)));
  const flags = home.dir === resolve(join(homedir(), '.cloakpipe')) ? [] : ['--home', home.dir];
  // Lines carry a server's own error text, names and paths from configs a repository wrote: no escape sequence reaches the terminal.
  const say = (line: string) => process.stderr.write(`cloakpipe ${name}: ${visible(line)}\n`);
  // A --server that names nothing would leave the server the user meant ungated, silently:
  // refused before anything is written, naming what was searched.
  if (v.server) {
    const names = new Set<string>();
    const searched: string[] = [];
    const unread: string[] = [];
    for (const cfg of list) {
      try {
        const n = serverNames(cfg);
        if (n === undefined) continue;
        searched.push(configLabel(cfg));
        for (const x of n) names.add(x);
      } catch (e) {
        if (!(e instanceof ConfigError)) throw e;
        unread.push(e.message);
      }
    }
    const unknown = [...new Set(v.server)].filter((n) => !names.has(n));
    if (unknown.length) {
      const where = searched.length ? searched.join(', ') : `any config (none found; looked at ${[...new Set(list.map((c) => c.path))].join(', ')})`;
      for (const n of unknown) {
        const hit = suggest(n, names);
        say(`--server ${JSON.stringify(n)}: no server of that name in ${where}${hit ? ` (did you mean ${JSON.stringify(hit)}?)` : ''}`);
      }
      for (const u of unread) say(`not searched: ${u}`);
      say('nothing changed');
      return 2;
    }
  }
  const common = { homeDir: home.dir, only: v.server ? new Set(v.server) : undefined, dryRun: v['dry-run'] === true, say, out: (t: string) => process.stdout.write(visibleLines(t)) };
  let failed = 0;
  let seen = 0;
  let release;
  try {
    release = common.dryRun ? () => undefined : lockHome(home.dir);
  } catch (e) {
    // The lock could not be written (a full disk, a read-only home): every config is left as is.
    if (isSystemError(e)) {
      for (const cfg of list.filter((c) => existsSync(c.path))) say(`${cfg.path}: left as is: ${e.message}`);
      return 1;
    }
    if (!(e instanceof HomeBusy)) throw e;
    say(`${e.message}; nothing changed`);
    return 1;
  }
  try {
    for (const cfg of list) {
      try {
        const r = unwrap ? await unwrapFile(cfg, common) : await wrapFile(cfg, { ...common, gate: { command: process.execPath, args: [...GATE_NODE_FLAGS, main], flags, readFlags: (a) => givenFlags(a, MCP_PROXY_OPTIONS) }, mode, modeAsked, timeoutMs, trustProject: v['trust-project'] === true });
        failed += r.failed;
        if (r.found !== false) seen++;
      } catch (e) {
        if (!(e instanceof ConfigError)) throw e;
        seen++;
        say(e.message);
        failed++;
      }
    }
  } finally {
    release();
  }
  if (seen === 0 && failed === 0) say(`no config found (looked at ${list.map((c) => c.path).join(', ')})`);
  return failed ? 1 : 0;
}
