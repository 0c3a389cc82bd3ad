// cloakpipe mcp-proxy: the gate in front of a stdio MCP server.
// The gate and the doors (Cedar, the store, the relay) are imported in run() once the flags
// hold: --help and a usage error answer without loading them.
import { duration, optionsHelp, parseFlags, required, timerDuration, UsageError, type Options } from './args.js';
import { readProxyConfig, splitCommandLine } from './upstream-command.js';
import type { GateConfig } from '../gate/open.js';
import { DEFAULT_MAX_IN_FLIGHT } from '../doors/limits.js';
import { DEFAULT_MAX_LINE_BYTES } from '../wire/frame.js';
import { resolveHome } from '../store/home.js';
import { serverGateFiles, ServerNameError } from '../onboarding/server-home.js';
import { STORE_OPTION } from './store-flags.js';
import { UPSTREAM_URL_OPTIONS, upstreamUrlFrom } from './upstream-url.js';
import type { Transport } from '../doors/transport.js';
import { withUpstreamOnly } from '../onboarding/upstream-only-env.js';

export const OPTIONS = {
  manifest: { type: 'string', arg: 'FILE', help: 'the tool manifest (YAML or JSON, v1); required unless --server' },
  policy: { type: 'string', arg: 'FILE', help: 'the Cedar policy; required unless --server' },
  server: { type: 'string', arg: 'NAME', help: "take the manifest, policy and context (if any) from the home's servers/NAME/ (as cloakpipe wrap writes them); --manifest, --policy, --context win" },
  context: { type: 'string', arg: 'FILE', help: 'the task context (JSON), re-read when it changes', defaultText: 'none (an empty context)' },
  mode: { type: 'string', arg: 'enforce|shadow', default: 'enforce', help: 'shadow records what enforce would refuse and forwards it' },
  'approver-key': { type: 'string', arg: 'PEM', multiple: true, help: 'a public key whose receipts approve calls', defaultText: 'none' },
  'request-ttl': { type: 'string', arg: 'DURATION', default: '1h', help: 'how long a call refused approval_required waits in the approval inbox (cloakpipe inbox serve)' },
  'anchor-interval': { type: 'string', arg: 'DURATION', help: 'seal and anchor an epoch this often', defaultText: 'at shutdown only' },
  tsa: { type: 'string', arg: 'URL', help: 'RFC 3161 time-stamp authority to anchor epochs at (needs --tsa-root)', defaultText: 'none' },
  'tsa-root': { type: 'string', arg: 'PEM', help: "the TSA's root certificate" },
  rekor: { type: 'string', arg: 'URL', help: 'Rekor transparency log to anchor epochs at (needs --rekor-key)', defaultText: 'none' },
  'rekor-key': { type: 'string', arg: 'PEM', help: "the Rekor log's public key" },
  home: { type: 'string', arg: 'DIR', help: 'the gate home', defaultText: '$CLOAKPIPE_HOME or ~/.cloakpipe' },
  key: { type: 'string', arg: 'pkcs11:URI', help: 'sign with the gate key in a PKCS#11 token (RFC 7512 URI with module-path)', defaultText: "the home's (gate.key, or the token init recorded)" },
  'pin-file': { type: 'string', arg: 'FILE', help: "the token's PIN (mode 0600)", defaultText: '$CLOAKPIPE_PKCS11_PIN' },
  ...STORE_OPTION,
  agent: { type: 'string', arg: 'ID', help: 'the Cedar principal', defaultText: "task.agent, else 'agent'" },
  'call-timeout': { type: 'string', arg: 'DURATION', default: '60s', help: 'a call unanswered this long ends as -32003 outcome unknown; any other request, as -32603' },
  'max-frame': { type: 'string', arg: 'BYTES', help: 'longest line accepted from the host', defaultText: String(DEFAULT_MAX_LINE_BYTES) },
  upstream: { type: 'string', arg: '"CMD ARGS"', help: 'the upstream command as one string, split into words like a shell would (no shell runs; quote with \'…\')' },
  'max-in-flight': { type: 'string', arg: 'N', default: String(DEFAULT_MAX_IN_FLIGHT), help: 'requests in flight past which the host is not read (backpressure); also the calls sent with a task a session holds open (more are refused too_many_tasks)' },
  'list-undeclared': { type: 'boolean', help: "offer the host the server's whole tools/list", defaultText: 'declared tools only' },
  config: { type: 'string', arg: 'FILE', help: 'JSON {"command", "args", "flags"}: the upstream and any flags; paths relative to the file; command-line flags win' },
  ...UPSTREAM_URL_OPTIONS,
} satisfies Options;

/** Flags whose values are paths: a --config file's are resolved against its own folder. */
const PATH_FLAGS = new Set(['manifest', 'policy', 'context', 'approver-key', 'home', 'tsa-root', 'rekor-key', 'pin-file', 'upstream-header-file']);

const HELP = `usage: cloakpipe mcp-proxy --manifest FILE --policy FILE [options] -- UPSTREAM_COMMAND [ARGS...]
       cloakpipe mcp-proxy --server NAME [options] -- UPSTREAM_COMMAND [ARGS...]
       cloakpipe mcp-proxy --manifest FILE --policy FILE [options] --upstream-url URL [--upstream-header "Name: value"]... [--upstream-header-file FILE]
       cloakpipe mcp-proxy --manifest FILE --policy FILE [options] --upstream "UPSTREAM_COMMAND ARGS"
       cloakpipe mcp-proxy --config FILE [options]

Speaks MCP over stdio to the host, spawns the upstream server, and gates every tools/call:
strict parsing, the manifest, the task context, the Cedar policy, approvals, operations and
sensitivity labels; every decision is a signed ledger entry, durable before anything is
forwarded. stdout carries only protocol frames; diagnostics go to stderr. The upstream gets the
gate's environment minus CLOAKPIPE_* (and PGPASSWORD with --store postgres://…), with each
CLOAKPIPE_UPSTREAM_ENV_NAME given as NAME: how wrap passes NODE_OPTIONS, LD_PRELOAD and the like
to the server alone. An upstream that cannot be started is exit 2.

options:
${optionsHelp(OPTIONS)}
  --help                          this text

The upstream is named once: after --, by --upstream, or by "command"/"args" in --config. Use
--upstream or --config where the client cuts its own arguments at the first -- (the MCP
Inspector CLI). --upstream splits on blanks; '…' keeps text literally, "…" too except \\" and
\\\\; no variable, ~ or glob expansion happens, so unquoted $ \` * ? [ ~ # | & ; < > ( ) are
refused: quote them with '…' when they are meant literally.

SIGTERM or SIGINT: stop reading the host, let calls in flight finish (up to 5 s), stop the
upstream (SIGTERM, SIGKILL 2 s later), record the shutdown, exit 0.
`;

export async function run(argv: string[]): Promise<number> {
  // First: a signal during start-up (loading, opening the home) must not kill the process with
  // the ledger opened and no shutdown recorded; it is kept and acted on once start-up is done.
  let signal: NodeJS.Signals | null = null;
  let relay: { stop(): Promise<void> } | undefined;
  const stop = (name: NodeJS.Signals) => {
    signal ??= name;
    void relay?.stop();
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  const dash = argv.indexOf('--');
  const own = dash >= 0 ? argv.slice(0, dash) : argv;
  let upstream = dash >= 0 ? argv.slice(dash + 1) : [];
  let values: Record<string, unknown>;
  try {
    values = parseFlags(own, OPTIONS).values;
  } catch (e) {
    // A forgotten `--`: the upstream's words arrive as stray positionals.
    if (e instanceof UsageError && /^Unexpected argument/.test(e.message)) {
      throw new UsageError(`${e.message}: name the upstream after --, or with --upstream "CMD ARGS" or --config FILE`);
    }
    throw e;
  }
  if (values.help) return void process.stdout.write(HELP), 0;
  if (values.config !== undefined) {
    const cfg = readProxyConfig(values.config as string, OPTIONS, PATH_FLAGS);
    // Command-line flags win over the file's; parseArgs defaults do not count as given.
    const given = new Set(own.filter((a) => a.startsWith('--')).map((a) => a.slice(2).split('=')[0]));
    for (const [k, v] of Object.entries(cfg.flags)) if (!given.has(k)) values[k] = v;
    if (cfg.command.length > 0) {
      if (upstream.length > 0 || values.upstream !== undefined) throw new UsageError('the upstream is named twice: --config has "command" and the command line names one too');
      upstream = cfg.command;
    }
  }
  if (values.upstream !== undefined) {
    if (upstream.length > 0) throw new UsageError('the upstream is named twice: --upstream and after --');
    upstream = splitCommandLine(values.upstream as string);
  }
  const remote = upstreamUrlFrom(values, (m) => process.stderr.write(`cloakpipe mcp-proxy: ${m}\n`));
  if (remote && upstream.length > 0) throw new UsageError('the upstream is named twice: --upstream-url and a command');
  if (!remote && upstream.length === 0) throw new UsageError('missing upstream command: after --, or --upstream "CMD ARGS", or "command" in --config, or --upstream-url URL');
  const mode = values.mode as string;
  if (mode !== 'enforce' && mode !== 'shadow') throw new UsageError('--mode must be enforce or shadow');
  const callTimeoutMs = timerDuration(values['call-timeout'] as string, '--call-timeout');
  const anchorIntervalMs = values['anchor-interval'] ? timerDuration(values['anchor-interval'] as string, '--anchor-interval') : undefined;
  if (values.server !== undefined) {
    let files;
    try {
      files = serverGateFiles(resolveHome(values.home as string | undefined).dir, values.server as string);
    } catch (e) {
      if (!(e instanceof ServerNameError)) throw e;
      process.stderr.write(`cloakpipe mcp-proxy: cannot start: ${e.message}\n`);
      return 2;
    }
    values.manifest ??= files.manifest;
    values.policy ??= files.policy;
    if (files.context !== undefined) values.context ??= files.context;
  }
  const { anchorTargets } = await import('./ledger-anchor.js');
  const anchors = anchorTargets(values as { tsa?: string; 'tsa-root'?: string; rekor?: string; 'rekor-key'?: string });
  const maxLineBytes = values['max-frame'] ? Number(values['max-frame']) : DEFAULT_MAX_LINE_BYTES;
  if (!Number.isSafeInteger(maxLineBytes) || maxLineBytes < 1024) throw new UsageError('--max-frame must be an integer of at least 1024');
  const maxInFlight = Number(values['max-in-flight']);
  if (!Number.isSafeInteger(maxInFlight) || maxInFlight < 1) throw new UsageError('--max-in-flight must be a positive integer');
  const [{ openGate }, { Relay }, { StdioHostTransport }, { ProcessTransport, UpstreamStartError }] = await Promise.all([
    import('../gate/open.js'),
    import('../doors/relay.js'),
    import('../doors/stdio.js'),
    import('../doors/upstream/process.js'),
  ]);
  if (signal !== null) return 0; // stopped before anything was opened: nothing to record
  let opened;
  try {
    opened = await openGate(gateConfigFrom(values, { mode, callTimeoutMs, anchorIntervalMs, anchors, contextPath: values.context as string | undefined }));
  } catch (e) {
    if (e instanceof UsageError) throw e;
    // Fail closed: nothing is spawned when anything the gate needs does not load.
    process.stderr.write(`cloakpipe mcp-proxy: cannot start: ${(e as Error).message}\n`);
    return 2;
  }
  if (signal !== null) {
    // Stopped while the home was opened: the start is recorded, so is the end; nothing was spawned.
    await opened.close(signal);
    return 0;
  }
  const session = new Relay({
    gate: opened.gate,
    host: new StdioHostTransport(process.stdin, process.stdout, maxLineBytes),
    upstream: remote ? remote.connect() : (new ProcessTransport(upstream[0], upstream.slice(1), { env: withUpstreamOnly(process.env), sharedStore: 'gateId' in opened.store }) as Transport),
    maxLineBytes,
    maxInFlight,
    requestTimeoutMs: callTimeoutMs,
    listUndeclared: values['list-undeclared'] === true,
  });
  relay = session;
  process.stdout.on('error', () => process.stdin.destroy()); // host went away
  let code: number;
  try {
    code = await session.run();
  } catch (e) {
    if (!(e instanceof UpstreamStartError)) throw e;
    process.stderr.write(`cloakpipe mcp-proxy: ${e.message}\n`);
    await opened.close('upstream_exit');
    process.stdin.destroy();
    return 2;
  }
  await opened.close(signal ?? (code === 0 ? 'ended' : 'upstream_exit'));
  process.stdin.destroy(); // the upstream's exit ends the gate even while the host keeps stdin open
  return code;
}

/** The gate's configuration from the flags both proxies share (mcp-proxy, http-proxy). */
export function gateConfigFrom(
  values: Record<string, unknown>,
  parsed: Pick<GateConfig, 'mode' | 'callTimeoutMs' | 'anchorIntervalMs' | 'anchors' | 'contextPath'>,
): GateConfig {
  return {
    home: values.home as string | undefined,
    store: values.store as string | undefined,
    key: { uri: values.key as string | undefined, pinFile: values['pin-file'] as string | undefined },
    manifestPath: required(values.manifest as string | undefined, '--manifest'),
    policyPath: required(values.policy as string | undefined, '--policy'),
    agent: values.agent as string | undefined,
    approverKeys: (values['approver-key'] as string[] | undefined) ?? [],
    requestTtlMs: values['request-ttl'] === undefined ? undefined : duration(values['request-ttl'] as string, '--request-ttl'),
    ...parsed,
  };
}
