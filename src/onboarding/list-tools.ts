// Reads a server's whole tools/list (every page) with the official SDK client, as a host would.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { upstreamEnv } from '../doors/upstream/process.js';
import type { ListedTool } from './draft.js';
import { ServerProcessTransport } from './server-process.js';

export class ServerError extends Error {}

const MAX_PAGES = 1000;

export interface Listed {
  tools: ListedTool[];
  /** name@version from the server's initialize answer. */
  release: string;
}

/** The server: a command to start (stdio), or the URL of a Streamable HTTP endpoint. */
export type ServerTarget = { command: string; args: string[]; env?: Record<string, string>; cwd?: string } | { url: URL; headers?: [string, string][] };

export async function listServerTools(target: ServerTarget, timeoutMs: number): Promise<Listed> {
  let transport: Transport;
  let named: string;
  if ('url' in target) {
    // Credentials in the URL travel as HTTP Basic (fetch refuses them in a URL); they are never
    // shown: messages name the origin and path only.
    const url = new URL(target.url.href);
    const headers: Record<string, string> = Object.fromEntries(target.headers ?? []);
    if (url.username || url.password) {
      if (Object.keys(headers).some((k) => k.toLowerCase() === 'authorization')) throw new ServerError('credentials in the URL and an Authorization header: give one of them');
      headers.authorization = `Basic ${Buffer.from(`${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`).toString('base64')}`;
      url.username = '';
      url.password = '';
    }
    transport = new StreamableHTTPClientTransport(url, { requestInit: { headers } });
    named = url.origin + url.pathname;
  } else {
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries(upstreamEnv())) if (v !== undefined) env[k] = v;
    Object.assign(env, target.env); // a host entry's env, as the host would add it
    transport = new ServerProcessTransport({ command: target.command, args: target.args, env, cwd: target.cwd });
    named = target.command;
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
          if ('url' in target) reason = reason.split(target.url.href).join(named).replace(/\?\S*/g, '');
          // The SDK's HTTP errors carry the status as a number: name it (401/403: the credentials).
          const status = (e as { code?: unknown }).code;
          if ('url' in target && typeof status === 'number') reason = `HTTP ${status}${status === 401 || status === 403 ? ' (check its headers or credentials)' : ''}: ${reason}`;
          throw new ServerError(`cannot ${'url' in target ? 'reach' : 'start'} the server ${JSON.stringify(named)}: ${reason}`);
        }
        const tools: ListedTool[] = [];
        const cursors = new Set<string>();
        let cursor: string | undefined;
        for (let page = 0; ; page++) {
          if (page >= MAX_PAGES) throw new ServerError(`tools/list has more than ${MAX_PAGES} pages`);
          let r;
          try {
            r = await client.listTools(cursor === undefined ? {} : { cursor });
          } catch (e) {
            let reason = (e as Error).message.split('\n')[0];
            if ('url' in target) reason = reason.split(target.url.href).join(named).replace(/\?\S*/g, '');
            throw new ServerError(`tools/list failed: ${reason}`);
          }
          tools.push(...(r.tools as ListedTool[]));
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
