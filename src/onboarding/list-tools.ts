// Reads a server's whole tools/list (every page) with the official SDK client, as a host would.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { upstreamEnv } from '../doors/upstream.js';
import type { ListedTool } from './draft.js';

export class ServerError extends Error {}

const MAX_PAGES = 1000;

export interface Listed {
  tools: ListedTool[];
  /** name@version from the server's initialize answer. */
  release: string;
}

export async function listServerTools(command: string, args: string[], timeoutMs: number): Promise<Listed> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(upstreamEnv())) if (v !== undefined) env[k] = v;
  const transport = new StdioClientTransport({ command, args, env, stderr: 'inherit' });
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
          const reason = code === 'ENOENT' ? 'command not found' : code === 'EACCES' ? 'not executable (permission denied)' : (e as Error).message;
          throw new ServerError(`cannot start the server ${JSON.stringify(command)}: ${reason}`);
        }
        const tools: ListedTool[] = [];
        const cursors = new Set<string>();
        let cursor: string | undefined;
        for (let page = 0; ; page++) {
          if (page >= MAX_PAGES) throw new ServerError(`tools/list has more than ${MAX_PAGES} pages`);
          const r = await client.listTools(cursor === undefined ? {} : { cursor });
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
