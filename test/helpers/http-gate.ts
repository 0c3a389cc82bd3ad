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
}

export interface HttpGate {
  url: string;
  child: ChildProcess;
  stderr(): string;
  /** SIGTERM, then the exit status. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
  exited: Promise<number | null>;
}

export async function startHttpGate(o: HttpGateOptions): Promise<HttpGate> {
  const child = spawn(
    process.execPath,
    [CLI, 'http-proxy', '--home', o.home, '--manifest', o.manifest, '--policy', o.policy, '--listen', '127.0.0.1:0', ...(o.flags ?? []), '--', ...o.upstream],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let err = '';
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  const url = await new Promise<string>((resolve, reject) => {
    child.stderr!.on('data', (d: Buffer) => {
      err += d.toString();
      const m = /listening on (http:\/\/\S+)/.exec(err);
      if (m) resolve(m[1]);
    });
    void exited.then((code) => reject(new Error(`http-proxy exited ${code}: ${err}`)));
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
