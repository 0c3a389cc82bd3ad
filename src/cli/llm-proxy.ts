// cloakpipe llm-proxy: the gate between an agent and its model's API (OpenAI Chat Completions
// and Responses, Anthropic Messages), deciding every tool call the model proposes
// (shared/spec/llm.md).
import { optionsHelp, parseFlags, required, timerDuration, UsageError, type Options } from './args.js';
import { OPTIONS as PROXY_OPTIONS, gateConfigFrom } from './mcp-proxy.js';
import { openGate } from '../gate/open.js';
import { LlmDoor } from '../doors/llm/server.js';
import { isLoopback, readTokenFile, type StaticTokens } from '../doors/http-auth.js';
import { anchoring, authority, parseListen, serveUntilSignal } from './serve.js';
import { DEFAULT_MAX_CONNECTIONS } from '../doors/limits.js';

// Flags of the MCP doors that have no meaning here (no upstream server, no tools/list); the
// model API's URL and call timeout mean something else here and are defined below.
const { upstream: _u, config: _c, 'max-frame': _f, server: _s, 'max-in-flight': _m, 'list-undeclared': _l, 'call-timeout': _t, 'upstream-url': _uu, 'upstream-header': _uh, 'upstream-header-file': _uf, ...SHARED } = PROXY_OPTIONS;

export const OPTIONS = {
  ...SHARED,
  'upstream-url': { type: 'string', arg: 'URL', help: 'the model API base: POST PATH goes to URL + PATH (e.g. https://api.openai.com/v1, https://api.anthropic.com)' },
  listen: { type: 'string', arg: 'HOST:PORT', default: '127.0.0.1:8933', help: 'where to listen (non-loopback needs --auth-token-file)' },
  'auth-token-file': { type: 'string', arg: 'FILE', help: 'agent tokens for the gate, one "TOKEN AGENT_ID" a line, sent as Proxy-Authorization: Bearer TOKEN (mode 0600)', defaultText: 'none (loopback only)' },
  'on-refusal': { type: 'string', arg: 'rewrite|error', default: 'rewrite', help: 'rewrite: the call becomes a text part; error: the response becomes HTTP 403 (an error event in a stream)' },
  'call-timeout': { type: 'string', arg: 'DURATION', default: '30m', help: 'a released call whose result no request has brought back this long ends outcome unknown' },
  'max-body': { type: 'string', arg: 'BYTES', default: String(16 * 1024 * 1024), help: 'largest request, response and stream event' },
  'stream-timeout': { type: 'string', arg: 'DURATION', default: '10m', help: 'longest a model API response may take, streamed or not, and the agent to read it (cut and recorded beyond)' },
  'max-connections': {
    type: 'string',
    arg: 'N',
    default: String(DEFAULT_MAX_CONNECTIONS),
    help: 'open agent connections at most (each request in flight is one, and each kept-alive idle one); one beyond is closed at once. Keep it under the descriptor limit (ulimit -n), which the model API connections and the databases share',
  },
} satisfies Options;

const HELP = `usage: cloakpipe llm-proxy --manifest FILE --policy FILE --upstream-url URL [options]

Point the agent's SDK base URL at the gate (http://HOST:PORT, plus /v1 for OpenAI clients when
--upstream-url ends in /v1). Requests go to the model API as sent, with only the headers it
needs (the agent's API key among them). Every tool call the response proposes is held until
its arguments are complete, read strictly and decided like an MCP tools/call (manifest, task
context, Cedar, approvals, labels), and recorded in the ledger; tool results sent back in a
later request raise the session label. A refused call is replaced by a text part
"cloakpipe refused TOOL: CODE: DETAIL" and the finish/stop reason adjusted (--on-refusal
rewrite), or the response becomes an error (--on-refusal error). A response the gate cannot
read is refused fail_closed. Approval receipts: the inbox, or the Cloakpipe-Approval header
(base64url receipt JSON, comma-separated). Each agent (token) is a session of its own.
SIGTERM/SIGINT: stop accepting, let responses in flight finish (10 s at most), exit 0.

options:
${optionsHelp(OPTIONS)}
  --help                          this text
`;

export async function run(argv: string[]): Promise<number> {
  const values = parseFlags(argv, OPTIONS).values as Record<string, unknown>;
  if (values.help) return void process.stdout.write(HELP), 0;
  const mode = values.mode as string;
  if (mode !== 'enforce' && mode !== 'shadow') throw new UsageError('--mode must be enforce or shadow');
  const onRefusal = values['on-refusal'] as string;
  if (onRefusal !== 'rewrite' && onRefusal !== 'error') throw new UsageError('--on-refusal must be rewrite or error');
  let upstreamUrl: URL;
  try {
    upstreamUrl = new URL(required(values['upstream-url'] as string | undefined, '--upstream-url'));
  } catch (e) {
    if (e instanceof UsageError) throw e;
    throw new UsageError('--upstream-url must be a URL');
  }
  if (upstreamUrl.protocol !== 'https:' && upstreamUrl.protocol !== 'http:') throw new UsageError('--upstream-url must be http or https');
  // The credential is the agent's own, per request: none lives in the gate's command line.
  if (upstreamUrl.username || upstreamUrl.password) throw new UsageError('--upstream-url must not carry credentials');
  // A request's path and query are appended to the base: a query or fragment there would end up
  // inside the path. (Some services put a key in the query: never echoed.)
  if (upstreamUrl.search || upstreamUrl.hash || upstreamUrl.href.endsWith('?') || upstreamUrl.href.endsWith('#'))
    throw new UsageError("--upstream-url must not carry a query or fragment: each request's own path and query are appended to it");
  const { host, port } = parseListen(values.listen as string);
  const maxBody = Number(values['max-body']);
  if (!Number.isSafeInteger(maxBody) || maxBody < 1024) throw new UsageError('--max-body must be an integer of at least 1024');
  const callTimeoutMs = timerDuration(values['call-timeout'] as string, '--call-timeout');
  const streamTimeoutMs = timerDuration(values['stream-timeout'] as string, '--stream-timeout');
  const maxConnections = Number(values['max-connections']);
  if (!Number.isSafeInteger(maxConnections) || maxConnections < 1) throw new UsageError('--max-connections must be a positive integer');
  const { anchorIntervalMs, anchors } = anchoring(values);
  const say = (m: string) => process.stderr.write(`cloakpipe llm-proxy: ${m}\n`);
  let tokens: StaticTokens | undefined;
  try {
    if (values['auth-token-file'] !== undefined) tokens = readTokenFile(values['auth-token-file'] as string);
  } catch (e) {
    say(`cannot start: ${(e as Error).message}`);
    return 2;
  }
  if (!tokens && !isLoopback(host)) throw new UsageError(`--listen ${values.listen as string} is not loopback: it needs --auth-token-file`);
  let opened;
  try {
    opened = await openGate(gateConfigFrom(values, { mode, callTimeoutMs, anchorIntervalMs, anchors, contextPath: values.context as string | undefined }));
  } catch (e) {
    if (e instanceof UsageError) throw e;
    say(`cannot start: ${(e as Error).message}`);
    return 2;
  }
  const door = new LlmDoor({
    gate: opened.gate,
    upstreamUrl,
    maxBodyBytes: maxBody,
    streamTimeoutMs,
    maxConnections,
    onRefusal,
    ...(tokens ? { tokens } : {}),
    ...(values.agent !== undefined ? { agent: values.agent as string } : {}),
  });
  return serveUntilSignal(door, opened, { listen: values.listen as string, host, port }, (p) => `http://${authority(host, p)}`, say);
}
