// cloakpipe http-proxy: the gate as an MCP Streamable HTTP server in front of a stdio MCP server
// (one upstream process per MCP session).
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { optionsHelp, parseFlags, timerDuration, UsageError, type Options } from './args.js';
import { OPTIONS as PROXY_OPTIONS, gateConfigFrom } from './mcp-proxy.js';
import { ProcessTransport } from '../doors/upstream/process.js';
import { openGate } from '../gate/open.js';
import { HttpDoor, PROTOCOL_VERSIONS } from '../doors/http-server.js';
import { DEFAULT_MAX_CONNECTIONS } from '../doors/limits.js';
import { isLoopback, readTokenFile } from '../doors/http-auth.js';
import { JwtVerifier } from '../doors/http-jwt.js';
import { isOrigin } from '../doors/http-cors.js';
import { isWildcard, parsePublicUrl } from './public-url.js';
import type { Authenticator } from '../doors/http-server.js';
import { DEFAULT_MAX_LINE_BYTES } from '../wire/frame.js';
import { upstreamUrlFrom } from './upstream-url.js';
import { checkTlsFlags, readTls, TLS_OPTIONS, type TlsFiles } from './tls-files.js';
import { anchoring, authority, parseListen, serveUntilSignal } from './serve.js';
import { withUpstreamOnly } from '../onboarding/upstream-only-env.js';

// --server: mcp-proxy only so far; refused here rather than accepted and ignored.
const { upstream: _u, config: _c, 'max-frame': _f, server: _s, ...SHARED } = PROXY_OPTIONS;

export const OPTIONS = {
  ...SHARED,
  'context-dir': { type: 'string', arg: 'DIR', help: 'DIR/TASK.json is the context of a session whose initialize carries Cloakpipe-Task: TASK' },
  listen: { type: 'string', arg: 'HOST:PORT', default: '127.0.0.1:8931', help: 'where to listen (non-loopback needs --auth-token-file or --jwks)' },
  path: { type: 'string', arg: 'PATH', default: '/mcp', help: 'the MCP endpoint' },
  'public-url': {
    type: 'string',
    arg: 'URL',
    help: 'the MCP endpoint as clients reach it (https:, or http: on loopback), named by the RFC 9728 metadata and the 401\'s WWW-Authenticate; needs tokens, and tokens on a wildcard --listen (0.0.0.0, ::) need it',
    defaultText: 'the --listen address and --path',
  },
  'auth-token-file': { type: 'string', arg: 'FILE', help: 'static bearer tokens, one "TOKEN AGENT_ID" a line (mode 0600)', defaultText: 'none (loopback only)' },
  jwks: { type: 'string', arg: 'FILE', help: 'JWT access tokens (RFC 9068) checked offline against this JWKS file (re-read when it changes); needs --issuer and --audience; the agent is the token\'s sub, else client_id', defaultText: 'none' },
  issuer: { type: 'string', arg: 'ISS', help: "the tokens' required iss" },
  audience: { type: 'string', arg: 'AUD', help: "the tokens' required aud (this resource)" },
  'allowed-origin': {
    type: 'string',
    arg: 'ORIGIN',
    multiple: true,
    help: 'a browser origin (scheme://host[:port]) whose pages may call: preflights answered, answers readable (CORS); any other Origin gets 403',
    defaultText: 'none',
  },
  'max-sessions': { type: 'string', arg: 'N', default: '64', help: 'open MCP sessions at most (503 beyond)' },
  'max-connections': {
    type: 'string',
    arg: 'N',
    default: String(DEFAULT_MAX_CONNECTIONS),
    help: 'open client connections at most (each POST in flight and each GET stream is one); one beyond is closed at once. Keep it under the descriptor limit (ulimit -n), which the upstreams and the databases share',
  },
  'session-idle': { type: 'string', arg: 'DURATION', default: '30m', help: 'a session without requests this long ends and its upstream stops' },
  ...TLS_OPTIONS,
  'max-body': { type: 'string', arg: 'BYTES', help: 'largest request body (413 beyond)', defaultText: String(DEFAULT_MAX_LINE_BYTES) },
} satisfies Options;

const HELP = `usage: cloakpipe http-proxy --manifest FILE --policy FILE [options] -- UPSTREAM_COMMAND [ARGS...]
       cloakpipe http-proxy --manifest FILE --policy FILE [options] --upstream-url URL [--upstream-header "Name: value"]... [--upstream-header-file FILE]

Serves MCP Streamable HTTP (${PROTOCOL_VERSIONS.join(', ')}) at --listen and --path and gates
every tools/call as mcp-proxy does. Every MCP session (Mcp-Session-Id) is a gate session of its
own with its own upstream process (or upstream session at --upstream-url), task context and agent; every ledger entry of a session
carries a digest of its id and its agent. Without --auth-token-file or --jwks only loopback is served.
SIGTERM/SIGINT: stop accepting, let calls in flight finish (10 s at most), stop the upstreams,
write the shutdown entry, exit 0.

options:
${optionsHelp(OPTIONS)}
  --help                          this text
`;

/**
 * With --context-dir the policy still needs a task shape to be checked against at start-up
 * (docs/decisions/, "context-dir typing"): the lexically first DIR/*.json. Each session's own
 * task is checked against the policy again when it is first used (policy/task-guard.ts).
 */
function typingTask(dir: string | undefined): string | undefined {
  if (dir === undefined) return undefined;
  let names: string[];
  try {
    names = readdirSync(dir).filter((n) => /^[A-Za-z0-9._-]{1,128}\.json$/.test(n)).sort();
  } catch (e) {
    throw new UsageError(`--context-dir ${dir}: ${(e as NodeJS.ErrnoException).code ?? 'unreadable'}`);
  }
  return names.length > 0 ? join(dir, names[0]) : undefined;
}

export async function run(argv: string[]): Promise<number> {
  const dash = argv.indexOf('--');
  const own = dash >= 0 ? argv.slice(0, dash) : argv;
  const upstream = dash >= 0 ? argv.slice(dash + 1) : [];
  const values = parseFlags(own, OPTIONS).values as Record<string, unknown>;
  if (values.help) return void process.stdout.write(HELP), 0;
  const say = (m: string) => process.stderr.write(`cloakpipe http-proxy: ${m}\n`);
  const remote = upstreamUrlFrom(values, say);
  if (remote && upstream.length > 0) throw new UsageError('the upstream is named twice: --upstream-url and a command after --');
  if (!remote && upstream.length === 0) throw new UsageError('missing upstream: a command after --, or --upstream-url URL');
  const mode = values.mode as string;
  if (mode !== 'enforce' && mode !== 'shadow') throw new UsageError('--mode must be enforce or shadow');
  if (values.context !== undefined && values['context-dir'] !== undefined) throw new UsageError('--context and --context-dir exclude each other');
  const { host, port } = parseListen(values.listen as string);
  const path = values.path as string;
  if (!path.startsWith('/')) throw new UsageError('--path must start with /');
  const maxSessions = Number(values['max-sessions']);
  if (!Number.isSafeInteger(maxSessions) || maxSessions < 1) throw new UsageError('--max-sessions must be a positive integer');
  const maxConnections = Number(values['max-connections']);
  if (!Number.isSafeInteger(maxConnections) || maxConnections < 1) throw new UsageError('--max-connections must be a positive integer');
  const maxBody = values['max-body'] !== undefined ? Number(values['max-body']) : DEFAULT_MAX_LINE_BYTES;
  if (!Number.isSafeInteger(maxBody) || maxBody < 1024) throw new UsageError('--max-body must be an integer of at least 1024');
  const maxInFlight = Number(values['max-in-flight']);
  if (!Number.isSafeInteger(maxInFlight) || maxInFlight < 1) throw new UsageError('--max-in-flight must be a positive integer');
  const sessionIdleMs = timerDuration(values['session-idle'] as string, '--session-idle');
  const callTimeoutMs = timerDuration(values['call-timeout'] as string, '--call-timeout');
  const { anchorIntervalMs, anchors } = anchoring(values);
  checkTlsFlags(values);
  const allowedOrigins = (values['allowed-origin'] as string[] | undefined) ?? [];
  allowedOrigins.forEach((o, i) => {
    // A spelling no browser sends would never match: refused rather than silently useless.
    if (!isOrigin(o)) throw new UsageError(`--allowed-origin #${i + 1} is not an origin as a browser sends it: scheme://host[:port], http or https, lowercase, no default port, no path or trailing /; * and null are refused`);
  });
  const jwt = values.jwks !== undefined || values.issuer !== undefined || values.audience !== undefined;
  if (jwt && (values.jwks === undefined || values.issuer === undefined || values.audience === undefined)) throw new UsageError('--jwks, --issuer and --audience go together');
  if (jwt && values['auth-token-file'] !== undefined) throw new UsageError('--auth-token-file and --jwks exclude each other');
  let tokens: Authenticator | undefined;
  let tls: TlsFiles | undefined;
  try {
    if (values['auth-token-file'] !== undefined) tokens = readTokenFile(values['auth-token-file'] as string);
    if (jwt) tokens = new JwtVerifier({ jwksPath: values.jwks as string, issuer: values.issuer as string, audience: values.audience as string });
    if (values['tls-cert'] !== undefined) tls = readTls(values['tls-cert'] as string, values['tls-key'] as string);
  } catch (e) {
    say(`cannot start: ${(e as Error).message}`);
    return 2;
  }
  const scheme = tls ? 'https' : 'http';
  // Anyone who can reach a non-loopback port could call the tools: not without a credential.
  if (!tokens && !isLoopback(host)) throw new UsageError(`--listen ${values.listen as string} is not loopback: it needs --auth-token-file or --jwks`);
  // Only the token metadata names it: refused rather than accepted and ignored.
  if (!tokens && values['public-url'] !== undefined) throw new UsageError('--public-url needs --auth-token-file or --jwks');
  const publicUrl = values['public-url'] !== undefined ? parsePublicUrl(values['public-url'] as string, path) : undefined;
  // 0.0.0.0 in a 401 points a client nowhere, and a request's Host is the caller's to choose.
  if (tokens && !publicUrl && isWildcard(host)) throw new UsageError(`--listen ${values.listen as string} names no address a client can reach: give --public-url (the endpoint as clients reach it) for the RFC 9728 metadata and WWW-Authenticate`);
  let opened;
  try {
    const contextPath = (values.context as string | undefined) ?? typingTask(values['context-dir'] as string | undefined);
    opened = await openGate(gateConfigFrom(values, { mode, callTimeoutMs, anchorIntervalMs, anchors, contextPath }));
  } catch (e) {
    if (e instanceof UsageError) throw e;
    say(`cannot start: ${(e as Error).message}`);
    return 2;
  }
  const door: HttpDoor = new HttpDoor({
    gate: opened.gate,
    upstream: remote ? remote.connect : () => new ProcessTransport(upstream[0], upstream.slice(1), { env: withUpstreamOnly(process.env), sharedStore: 'gateId' in opened.store }),
    path,
    maxBodyBytes: maxBody,
    maxSessions,
    maxConnections,
    maxInFlight,
    listUndeclared: values['list-undeclared'] === true,
    sessionIdleMs,
    ...(values.context !== undefined ? { context: { file: values.context as string } } : {}),
    ...(values['context-dir'] !== undefined ? { context: { dir: values['context-dir'] as string } } : {}),
    ...(tokens ? { tokens } : {}),
    allowedOrigins,
    ...(values.agent !== undefined ? { agent: values.agent as string } : {}),
    ...(tls ? { tls } : {}),
    publicUrl: (): URL => publicUrl ?? new URL(`${scheme}://${authority(host, (door.server.address() as { port: number }).port)}${path}`),
    say,
  });
  return serveUntilSignal(door, opened, { listen: values.listen as string, host, port }, (p) => `${scheme}://${authority(host, p)}${path}`, say);
}
