// The official MCP SDK client, connected to an upstream server through the real gate binary.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { after } from 'node:test';
import { CLI } from './cli.js';

// A failing test must not leave gates behind to keep the test process (and the run) alive.
const open = new Set<Client>();
after(async () => {
  await Promise.allSettled([...open].map((c) => c.close()));
});

export interface GateOptions {
  home: string;
  manifest: string;
  policy: string;
  context?: string;
  flags?: string[];
  upstream: string[]; // command and args
  env?: Record<string, string>;
}

export function gateArgs(o: GateOptions): string[] {
  return [
    CLI, 'mcp-proxy', '--home', o.home, '--manifest', o.manifest, '--policy', o.policy,
    ...(o.context ? ['--context', o.context] : []),
    ...(o.flags ?? []),
    '--', ...o.upstream,
  ];
}

export interface Connected {
  client: Client;
  /** Everything the gate (and the upstream through it) wrote to stderr. */
  stderr(): string;
  close(): Promise<void>;
}

export async function connectThroughGate(o: GateOptions): Promise<Connected> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: gateArgs(o),
    stderr: 'pipe',
    env: { ...(process.env as Record<string, string>), ...(o.env ?? {}) },
  });
  let err = '';
  transport.stderr?.on('data', (d: Buffer) => (err += d.toString()));
  const client = new Client({ name: 'cloakpipe-test-host', version: '1.0.0' });
  await client.connect(transport);
  open.add(client);
  return {
    client,
    stderr: () => err,
    close: () => {
      open.delete(client);
      return client.close();
    },
  };
}
