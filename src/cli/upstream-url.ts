// `--upstream-url URL [--upstream-header "Name: value"]...`, shared by mcp-proxy and http-proxy:
// the upstream is a remote Streamable HTTP server. Header values are credentials: they are
// checked without being echoed and reach nothing but the upstream's requests.
import { UsageError } from './args.js';
import type { Transport } from '../doors/transport.js';
import { HttpUpstreamTransport, parseUpstreamHeader, parseUpstreamUrl, UpstreamHeaderError } from '../doors/upstream/http.js';

export const UPSTREAM_URL_OPTIONS = {
  'upstream-url': { type: 'string', arg: 'URL', help: 'the upstream is a remote MCP server at this Streamable HTTP endpoint (http: or https:) instead of a command' },
  'upstream-header': {
    type: 'string',
    arg: '"Name: value"',
    multiple: true,
    help: 'a header sent on every request to --upstream-url (credentials; never logged); the host\'s Authorization is never forwarded',
    defaultText: 'none',
  },
} as const;

/** A new upstream connection per session, or undefined when no --upstream-url was given. */
export function upstreamUrlFrom(values: Record<string, unknown>, say: (m: string) => void): { url: URL; connect: () => Transport } | undefined {
  const text = values['upstream-url'] as string | undefined;
  const given = (values['upstream-header'] as string[] | undefined) ?? [];
  if (text === undefined) {
    if (given.length > 0) throw new UsageError('--upstream-header needs --upstream-url');
    return undefined;
  }
  try {
    const url = parseUpstreamUrl(text);
    const headers = given.map(parseUpstreamHeader);
    const lower = headers.map(([n]) => n.toLowerCase());
    const twice = lower.find((n, i) => lower.indexOf(n) !== i);
    if (twice !== undefined) throw new UpstreamHeaderError(`--upstream-header ${twice} is given twice`);
    return { url, connect: () => new HttpUpstreamTransport({ url, headers, say }) };
  } catch (e) {
    if (e instanceof UpstreamHeaderError) throw new UsageError(e.message);
    throw e;
  }
}
