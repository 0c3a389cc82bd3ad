// Where each agent host keeps its MCP server list (onboarding.md), at user and project level,
// under which key, and whether the host reads comments and trailing commas (JSONC).
import { homedir } from 'node:os';
import { join, resolve, sep } from 'node:path';

export const HOSTS = ['claude-desktop', 'claude-code', 'cursor', 'vscode', 'windsurf'] as const;
export type HostId = (typeof HOSTS)[number];

export interface HostConfig {
  host: HostId | 'file';
  level: 'user' | 'project' | 'file';
  path: string;
  /** The key holding the servers; a FILE takes whichever it has. */
  key: 'mcpServers' | 'servers' | undefined;
  /** The object holding `key`, when not the top level (Claude Code's projects[DIR]). */
  under?: string[];
  /** VS Code and Cursor (a VS Code fork) read their mcp.json as JSONC; the others as JSON. */
  jsonc: boolean;
  /** A project's own file: the folder the host opened, whose repository chose every name below it (a link too). */
  within?: string;
}

interface Where {
  os: NodeJS.Platform;
  home: string;
  cwd: string;
  appData?: string;
}

function appSupport(w: Where): string {
  if (w.os === 'darwin') return join(w.home, 'Library', 'Application Support');
  if (w.os === 'win32') return w.appData ?? join(w.home, 'AppData', 'Roaming');
  return join(w.home, '.config');
}

export function hostConfigs(host: HostId, w: Where = { os: process.platform, home: homedir(), cwd: process.cwd(), appData: process.env.APPDATA }): HostConfig[] {
  const c = (level: 'user' | 'project', path: string, key: 'mcpServers' | 'servers', jsonc: boolean): HostConfig => ({ host, level, path, key, jsonc, ...(level === 'project' ? { within: w.cwd } : {}) });
  switch (host) {
    case 'claude-desktop':
      return [c('user', join(appSupport(w), 'Claude', 'claude_desktop_config.json'), 'mcpServers', false)];
    case 'claude-code':
      // ~/.claude.json holds user servers at the top and local ones under projects[DIR].
      return [
        c('user', join(w.home, '.claude.json'), 'mcpServers', false),
        { ...c('user', join(w.home, '.claude.json'), 'mcpServers', false), level: 'project', under: ['projects', w.cwd] },
        c('project', join(w.cwd, '.mcp.json'), 'mcpServers', false),
      ];
    case 'cursor':
      return [c('user', join(w.home, '.cursor', 'mcp.json'), 'mcpServers', true), c('project', join(w.cwd, '.cursor', 'mcp.json'), 'mcpServers', true)];
    case 'vscode':
      return [c('user', join(appSupport(w), 'Code', 'User', 'mcp.json'), 'servers', true), c('project', join(w.cwd, '.vscode', 'mcp.json'), 'servers', true)];
    case 'windsurf':
      return [c('user', join(w.home, '.codeium', 'windsurf', 'mcp_config.json'), 'mcpServers', false)];
  }
}

/** A config named by path: its host told by where it sits, else plain JSON with either key. */
export function fileConfig(path: string, cwd = process.cwd()): HostConfig {
  const abs = resolve(cwd, path);
  const ends = (...parts: string[]) => abs.endsWith(sep + parts.join(sep));
  const f = (host: HostConfig['host'], key: HostConfig['key'], jsonc: boolean): HostConfig => ({ host, level: 'file', path: abs, key, jsonc });
  if (ends('.vscode', 'mcp.json') || ends('Code', 'User', 'mcp.json')) return f('vscode', 'servers', true);
  if (ends('.cursor', 'mcp.json')) return f('cursor', 'mcpServers', true);
  if (ends('claude_desktop_config.json')) return f('claude-desktop', 'mcpServers', false);
  if (ends('.claude.json') || ends('.mcp.json')) return f('claude-code', 'mcpServers', false);
  if (ends('windsurf', 'mcp_config.json')) return f('windsurf', 'mcpServers', false);
  return f('file', undefined, abs.endsWith('.jsonc'));
}
