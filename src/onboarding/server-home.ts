// Where a wrapped server's files live in the gate home: servers/NAME/{manifest.yaml,policy.cedar,
// context.json}, so a host entry names the server and not three absolute paths.
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';

export class ServerNameError extends Error {}

const SAFE = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$/;

/** A host's server name as a folder name: kept when it is one already, else made one with a digest suffix so two names never share a folder. */
export function serverFolderName(name: string): string {
  if (SAFE.test(name)) return name;
  const base = name.replace(/[^A-Za-z0-9_.-]+/g, '-').replace(/^[.-]+/, '').slice(0, 40) || 'server';
  return `${base}-${createHash('sha256').update(name).digest('hex').slice(0, 8)}`;
}

export interface ServerFiles {
  dir: string;
  manifest: string;
  policy: string;
  context: string;
  /** What wrap needs to undo itself: the original entries, by config file. */
  wrapped: string;
  /** A remote server's headers (credentials, 0600), as mcp-proxy --upstream-header-file reads them. */
  headers: string;
}

export const HEADERS_FILE = 'upstream.headers';

/** The files of server NAME (as given to mcp-proxy --server; a folder name, never a path). */
export function serverFiles(homeDir: string, name: string): ServerFiles {
  if (!SAFE.test(name)) throw new ServerNameError(`--server ${JSON.stringify(name)} is not a server name (letters, digits, _ . -; not a path)`);
  const dir = join(homeDir, 'servers', name);
  return {
    dir,
    manifest: join(dir, 'manifest.yaml'),
    policy: join(dir, 'policy.cedar'),
    context: join(dir, 'context.json'),
    wrapped: join(dir, 'wrapped.json'),
    headers: join(dir, HEADERS_FILE),
  };
}

/** The paths mcp-proxy --server uses: the manifest and policy must exist (checked by the gate as it loads them); the context is optional. */
export function serverGateFiles(homeDir: string, name: string): { manifest: string; policy: string; context?: string } {
  const f = serverFiles(homeDir, name);
  if (!existsSync(f.dir)) throw new ServerNameError(`no server ${JSON.stringify(name)} in the home (${f.dir}; cloakpipe wrap drafts it)`);
  return { manifest: f.manifest, policy: f.policy, context: existsSync(f.context) ? f.context : undefined };
}
