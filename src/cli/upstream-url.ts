// `--upstream-url URL [--upstream-header "Name: value"]... [--upstream-header-file FILE]`, shared
// by mcp-proxy and http-proxy: the upstream is a remote Streamable HTTP server. Header values are
// credentials: they are checked without being echoed and reach nothing but the upstream's
// requests. The file keeps them off the command line, which `ps` shows to every local user.
import { duration, UsageError } from './args.js';
import type { Transport } from '../doors/transport.js';
import { HttpUpstreamTransport, parseUpstreamUrl } from '../doors/upstream/http.js';
import { checkUnique, parseUpstreamHeader, readHeaderFile, UpstreamHeaderError } from '../doors/upstream/headers.js';

export const UPSTREAM_URL_OPTIONS = {
  'upstream-url': { type: 'string', arg: 'URL', help: 'the upstream is a remote MCP server at this Streamable HTTP endpoint (http: or https:) instead of a command' },
  'upstream-header': {
    type: 'string',
    arg: '"Name: value"',
    multiple: true,
    help: 'a header sent on every request to --upstream-url (credentials; never logged); the host\'s Authorization is never forwarded',
    defaultText: 'none',
  },
  'upstream-header-file': {
    type: 'string',
    arg: 'FILE',
    help: 'headers for --upstream-url read from FILE, one "Name: value" a line (# comments); mode 0600, owned by you: keeps credentials off the command line',
    defaultText: 'none',
  },
} as const;

/** A new upstream connection per session, or undefined when no --upstream-url was given. */
export function upstreamUrlFrom(values: Record<string, unknown>, say: (m: string) => void): { url: URL; connect: () => Transport } | undefined {
  const text = values['upstream-url'] as string | undefined;
  const given = (values['upstream-header'] as string[] | undefined) ?? [];
  const file = values['upstream-header-file'] as string | undefined;
  if (text === undefined) {
    if (given.length > 0) throw new UsageError('--upstream-header needs --upstream-url');
    if (file !== undefined) throw new UsageError('--upstream-header-file needs --upstream-url');
    return undefined;
  }
  try {
    const url = parseUpstreamUrl(text);
    const headers = upstreamHeadersFrom(values);
    // A resumed event stream lives no longer than its call (--call-timeout).
    const resumeWindowMs = values['call-timeout'] !== undefined ? duration(values['call-timeout'] as string, '--call-timeout') : undefined;
    return { url, connect: () => new HttpUpstreamTransport({ url, headers, say, ...(resumeWindowMs !== undefined ? { resumeWindowMs } : {}) }) };
  } catch (e) {
    if (e instanceof UpstreamHeaderError) throw new UsageError(e.message);
    throw e;
  }
}

/** The --upstream-header and --upstream-header-file headers, checked (a UsageError names the flag or line, never a value). */
export function upstreamHeadersFrom(values: Record<string, unknown>): [string, string][] {
  const given = (values['upstream-header'] as string[] | undefined) ?? [];
  const file = values['upstream-header-file'] as string | undefined;
  try {
    const headers = [...given.map(parseUpstreamHeader), ...(file !== undefined ? readHeaderFile(file) : [])];
    checkUnique(headers, '--upstream-header and --upstream-header-file');
    return headers;
  } catch (e) {
    if (e instanceof UpstreamHeaderError) throw new UsageError(e.message);
    throw e;
  }
}
