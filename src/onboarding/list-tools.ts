// Reads a server's whole tools/list (every page) with the official SDK client, as a host would.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { upstreamEnv } from '../doors/upstream/process.js';
import { shownUrl, type ListedTool } from './draft.js';
import { ServerProcessTransport } from './server-process.js';

export class ServerError extends Error {}

/**
 * A listing's bounds. A server that pages without end (a new cursor each time) was read until
 * 1,000 pages of up to 10 MiB each, every one kept twice: gigabytes before it was refused. Now
 * the tools of all pages together are at most 64 MiB as JSON (130,000 small tools take 5 MiB).
 */
const MAX_PAGES = 1000;
const MAX_LISTING_BYTES = 64 * 1024 * 1024;

export interface Listed {
  tools: ListedTool[];
  /** name@version from the server's initialize answer. */
  release: string;
}

/** The server: a command to start (stdio), or the URL of a Streamable HTTP endpoint. */
export type ServerTarget = { command: string; args: string[]; env?: Record<string, string>; cwd?: string } | { url: URL; headers?: [string, string][] };

/**
 * The tools of the latest tools/list answer as the server sent them (JSON.parse's objects), once
 * the SDK has checked that answer's shape. The SDK's checked copy drops a property named
 * `__proto__` (zod leaves that key out of the records it builds), so an argument of that name
 * was not drafted and every call using it was refused as undeclared.
 */
function tapToolsList(transport: Transport): () => unknown[] | undefined {
  let last: string | number | undefined;
  let answer: { tools: unknown } | undefined;
  const send = transport.send.bind(transport);
  transport.send = (m, opts) => {
    if ('method' in m && m.method === 'tools/list' && 'id' in m) (last = m.id), (answer = undefined);
    return send(m, opts);
  };
  const onmessage = transport.onmessage;
  transport.onmessage = (m, extra) => {
    // The first answer to the id asked is the one the SDK took; later ones it drops, and so does
    // this. Only the latest page is kept: the pages before are in the caller's list already.
    if ('id' in m && 'result' in m && m.id === last && answer === undefined) answer = { tools: (m.result as { tools?: unknown }).tools };
    onmessage?.(m, extra);
  };
  return () => {
    const tools = answer?.tools;
    return Array.isArray(tools) ? tools : undefined;
  };
}

/**
 * An error's text without the URL's path, query or credentials: the SDK's messages quote the
 * URL, and a server's 404 page quotes the path (Express: `Cannot POST /mcp/sk-…`).
 */
function withoutPath(reason: string, url: URL): string {
  let out = reason;
  const bare = new URL(url.href);
  bare.username = '';
  bare.password = '';
  for (const whole of [url.href, bare.href, bare.origin + bare.pathname]) out = out.split(whole).join(url.origin);
  const parts = [url.pathname + url.search, url.pathname, url.search, url.hash, url.username, url.password].flatMap((p) => {
    let decoded = p;
    try {
      decoded = decodeURIComponent(p);
    } catch {
      // not percent-encoded text: only its own form
    }
    return [p, decoded];
  });
  for (const p of parts.filter((x) => x.length > 1).sort((a, b) => b.length - a.length)) out = out.split(p).join('<elided>');
  return out.replace(/\?\S*/g, '');
}

export async function listServerTools(target: ServerTarget, timeoutMs: number): Promise<Listed> {
  let transport: Transport;
  let named: string;
  if ('url' in target) {
    // Credentials in the URL travel as HTTP Basic (fetch refuses them in a URL); they are never
    // shown: messages name the origin only (shownUrl), and an error's text loses the path.
    const url = new URL(target.url.href);
    const headers: Record<string, string> = Object.fromEntries(target.headers ?? []);
    if (url.username || url.password) {
      if (Object.keys(headers).some((k) => k.toLowerCase() === 'authorization')) throw new ServerError('credentials in the URL and an Authorization header: give one of them');
      headers.authorization = `Basic ${Buffer.from(`${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`).toString('base64')}`;
      url.username = '';
      url.password = '';
    }
    transport = new StreamableHTTPClientTransport(url, { requestInit: { headers } });
    named = shownUrl(url).replace(/^(\S+)/, (o) => JSON.stringify(o)); // "https://host" (path elided: …)
  } else {
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries(upstreamEnv())) if (v !== undefined) env[k] = v;
    Object.assign(env, target.env); // a host entry's env, as the host would add it
    transport = new ServerProcessTransport({ command: target.command, args: target.args, env, cwd: target.cwd });
    named = JSON.stringify(target.command);
  }
  const client = new Client({ name: 'cloakpipe-manifest-draft', version: '1' });
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new ServerError(`the server did not answer tools/list within ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    return await Promise.race([
      (async () => {
        try {
          await client.connect(transport);
        } catch (e) {
          const code = (e as NodeJS.ErrnoException).code;
          let reason = code === 'ENOENT' ? 'command not found' : code === 'EACCES' ? 'not executable (permission denied)' : (e as Error).message.split('\n')[0];
          if ('url' in target) reason = withoutPath(reason, target.url);
          // The SDK's HTTP errors carry the status as a number: name it (401/403: the credentials).
          const status = (e as { code?: unknown }).code;
          if ('url' in target && typeof status === 'number') reason = `HTTP ${status}${status === 401 || status === 403 ? ' (check its headers or credentials)' : ''}: ${reason}`;
          throw new ServerError(`cannot ${'url' in target ? 'reach' : 'start'} the server ${named}: ${reason}`);
        }
        const asSent = tapToolsList(transport);
        const tools: ListedTool[] = [];
        const cursors = new Set<string>();
        let cursor: string | undefined;
        let bytes = 0;
        for (let page = 0; ; page++) {
          if (page >= MAX_PAGES) throw new ServerError(`tools/list has more than ${MAX_PAGES} pages; not drafted`);
          let r;
          try {
            r = await client.listTools(cursor === undefined ? {} : { cursor });
          } catch (e) {
            let reason = (e as Error).message.split('\n')[0];
            if ('url' in target) reason = withoutPath(reason, target.url);
            throw new ServerError(`tools/list failed: ${reason}`);
          }
          const pageTools = asSent() ?? r.tools;
          bytes += JSON.stringify(pageTools).length + (r.nextCursor?.length ?? 0);
          if (bytes > MAX_LISTING_BYTES) throw new ServerError(`tools/list sent more than ${MAX_LISTING_BYTES / 1024 / 1024} MiB of tools in ${page + 1} pages; not drafted`);
          // One by one: spread into push, a page of some 130,000 tools overflowed the stack.
          for (const t of pageTools) tools.push(t as ListedTool);
          if (r.nextCursor === undefined) {
            const info = client.getServerVersion();
            return { tools, release: `${info?.name ?? 'server'}@${info?.version ?? '0'}` };
          }
          if (cursors.has(r.nextCursor)) throw new ServerError('tools/list repeats a cursor');
          cursors.add(r.nextCursor);
          cursor = r.nextCursor;
        }
      })(),
      deadline,
    ]);
  } finally {
    clearTimeout(timer);
    await client.close().catch(() => undefined);
  }
}
