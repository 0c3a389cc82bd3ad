// cloakpipe mcp-proxy: the gate in front of a stdio MCP server.
import { parseFlags, required, UsageError } from './args.js';
import { openGate } from '../gate/open.js';
import { Relay } from '../doors/relay.js';
import { StdioHostTransport } from '../doors/stdio.js';
import { ProcessTransport } from '../doors/upstream/process.js';
import { parseDuration } from '../util/duration.js';
import { DEFAULT_MAX_LINE_BYTES } from '../wire/frame.js';
import { anchorTargets } from './ledger-anchor.js';

const HELP = `usage: cloakpipe mcp-proxy --manifest FILE --policy FILE [--context FILE] [--mode enforce|shadow]
    [--approver-key PEM]... [--anchor-interval DURATION] [--tsa URL --tsa-root PEM]
    [--rekor URL --rekor-key PEM] [--home DIR] [--agent ID] [--call-timeout 60s]
    [--max-frame BYTES] -- UPSTREAM_COMMAND [ARGS...]

Speaks MCP over stdio to the host, spawns the upstream server, and gates every tools/call:
strict parsing, the manifest, the task context, the Cedar policy, approvals, operations and
sensitivity labels; every decision is a signed ledger entry, durable before anything is
forwarded. stdout carries only protocol frames; diagnostics go to stderr.
`;

export async function run(argv: string[]): Promise<number> {
  const dash = argv.indexOf('--');
  const own = dash >= 0 ? argv.slice(0, dash) : argv;
  const upstream = dash >= 0 ? argv.slice(dash + 1) : [];
  const { values } = parseFlags(own, {
    manifest: { type: 'string' },
    policy: { type: 'string' },
    context: { type: 'string' },
    mode: { type: 'string', default: 'enforce' },
    'approver-key': { type: 'string', multiple: true },
    'anchor-interval': { type: 'string' },
    tsa: { type: 'string' },
    'tsa-root': { type: 'string' },
    rekor: { type: 'string' },
    'rekor-key': { type: 'string' },
    home: { type: 'string' },
    agent: { type: 'string' },
    'call-timeout': { type: 'string', default: '60s' },
    'max-frame': { type: 'string' },
  });
  if (values.help) return void process.stdout.write(HELP), 0;
  if (upstream.length === 0) throw new UsageError('missing upstream command after --');
  const mode = values.mode as string;
  if (mode !== 'enforce' && mode !== 'shadow') throw new UsageError('--mode must be enforce or shadow');
  let callTimeoutMs: number;
  try {
    callTimeoutMs = parseDuration(values['call-timeout'] as string);
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  let anchorIntervalMs: number | undefined;
  try {
    anchorIntervalMs = values['anchor-interval'] ? parseDuration(values['anchor-interval'] as string) : undefined;
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  const anchors = anchorTargets(values as { tsa?: string; 'tsa-root'?: string; rekor?: string; 'rekor-key'?: string });
  const maxLineBytes = values['max-frame'] ? Number(values['max-frame']) : DEFAULT_MAX_LINE_BYTES;
  if (!Number.isSafeInteger(maxLineBytes) || maxLineBytes < 1024) throw new UsageError('--max-frame must be an integer of at least 1024');
  let opened;
  try {
    opened = await openGate({
      home: values.home as string | undefined,
      manifestPath: required(values.manifest as string | undefined, '--manifest'),
      policyPath: required(values.policy as string | undefined, '--policy'),
      contextPath: values.context as string | undefined,
      mode,
      agent: values.agent as string | undefined,
      approverKeys: (values['approver-key'] as string[] | undefined) ?? [],
      callTimeoutMs,
      anchorIntervalMs,
      anchors,
    });
  } catch (e) {
    if (e instanceof UsageError) throw e;
    // Fail closed: nothing is spawned when anything the gate needs does not load.
    process.stderr.write(`cloakpipe mcp-proxy: cannot start: ${(e as Error).message}\n`);
    return 2;
  }
  const stop = () => process.stdin.destroy();
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  process.stdout.on('error', () => process.stdin.destroy()); // host went away
  const relay = new Relay({
    gate: opened.gate,
    host: new StdioHostTransport(process.stdin, process.stdout, maxLineBytes),
    upstream: new ProcessTransport(upstream[0], upstream.slice(1)),
    maxLineBytes,
  });
  const code = await relay.run();
  await opened.close(code === 0 ? 'ended' : 'upstream_exit');
  process.stdin.destroy(); // the upstream's exit ends the gate even while the host keeps stdin open
  return code;
}
