// The real gate binary as `cloakpipe http-proxy` on a free loopback port, and the official SDK
// client connected to it over Streamable HTTP.
import { spawn, type ChildProcess } from 'node:child_process';
import { after } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CLI } from './cli.js';

const running = new Set<HttpGate>();
after(async () => {
  await Promise.allSettled([...running].map((g) => g.stop()));
});

export interface HttpGateOptions {
  home: string;
  manifest: string;
  policy: string;
  flags?: string[];
  upstream: string[];
  env?: Record<string, string>;
  /** Replaces `--listen 127.0.0.1:0`. */
  listen?: string;
  /** Node flags before the CLI (a preload). */
  node?: string[];
}

export interface HttpGate {
  url: string;
  child: ChildProcess;
  stderr(): string;
  /** SIGTERM, then the exit status. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
  exited: Promise<number | null>;
}

export function startHttpGate(o: HttpGateOptions): Promise<HttpGate> {
  return spawnDoor(
    'http-proxy',
    ['--home', o.home, '--manifest', o.manifest, '--policy', o.policy, '--listen', o.listen ?? '127.0.0.1:0', ...(o.flags ?? []), '--', ...o.upstream],
    o.env ?? {},
    o.node,
  );
}

/**
 * The gate binary as an HTTP door (`command`: http-proxy, llm-proxy), once it says where it
 * listens; stopped after the tests if a test has not. `node` goes before the CLI (a preload).
 */
export async function spawnDoor(command: string, args: string[], env: Record<string, string>, node: string[] = []): Promise<HttpGate> {
  const child = spawn(process.execPath, [...node, CLI, command, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  let err = '';
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  const url = await new Promise<string>((resolve, reject) => {
    child.stderr!.on('data', (d: Buffer) => {
      err += d.toString();
      const m = /listening on (https?:\/\/\S+)/.exec(err);
      if (m) resolve(m[1]);
    });
    void exited.then((code) => reject(new Error(`${command} exited ${code}: ${err}`)));
  });
  const g: HttpGate = {
    url,
    child,
    stderr: () => err,
    exited,
    stop: async (signal = 'SIGTERM') => {
      running.delete(g);
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
  running.add(g);
  return g;
}

export async function httpClient(url: string, headers: Record<string, string> = {}): Promise<Client> {
  const client = new Client({ name: 'cloakpipe-http-test-host', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
  return client;
}

export const INIT = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
};

/** One raw POST to the door; `accept` defaults to what the SDK sends. */
export function post(url: string, body: unknown, headers: Record<string, string> = {}, signal?: AbortSignal): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    ...(signal ? { signal } : {}),
    headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

/** An initialized session over raw HTTP: its id. */
export async function rawSession(url: string, headers: Record<string, string> = {}): Promise<string> {
  const r = await post(url, INIT, { Accept: 'application/json', ...headers });
  if (r.status !== 200) throw new Error(`initialize: ${r.status} ${await r.text()}`);
  await r.text();
  const sid = r.headers.get('mcp-session-id')!;
  const n = await post(url, { jsonrpc: '2.0', method: 'notifications/initialized' }, { 'Mcp-Session-Id': sid, ...headers });
  if (n.status !== 202) throw new Error(`initialized: ${n.status}`);
  return sid;
}
