// The one gate starter of the suite: the real gate binary (`cloakpipe mcp-proxy`) in front of an
// upstream, with the official SDK client as host. Every fixture (approvals, the support desk,
// information flow, a bare server) builds its options and starts its gates here; raw-gate.ts
// drives the same command line with raw bytes. Also what every test reads back: the gate's
// answer to a call, the upstream's record of calls, the ledger.
import { execFile } from 'node:child_process';
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { after } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { CLI, cloakpipe, helperScript } from './cli.js';

export interface GateOptions {
  home: string;
  manifest: string;
  policy: string;
  context?: string;
  flags?: string[];
  /** The upstream's command and arguments. */
  upstream: string[];
  /** Added to this process's environment, for the gate and (less CLOAKPIPE_*) its upstream. */
  env?: Record<string, string>;
  /** Node options before the CLI (an OpenTelemetry SDK preloaded with --import). */
  node?: string[];
  /** How long the host waits for initialize (default 120 s: a cold start on a busy machine). */
  startTimeoutMs?: number;
  /** A command the gate runs under (e.g. unshare into its own namespaces): it runs node and its arguments. */
  under?: string[];
}

export function gateArgs(o: GateOptions): string[] {
  return [
    ...(o.node ?? []),
    CLI, 'mcp-proxy', '--home', o.home, '--manifest', o.manifest, '--policy', o.policy,
    ...(o.context ? ['--context', o.context] : []),
    ...(o.flags ?? []),
    '--', ...o.upstream,
  ];
}

/** The suite's recording upstream (upstream.ts) serving catalogue `tools`, its record of calls in `record`. */
export function recordingUpstream(tools: string, record: string, env: Record<string, string> = {}): Pick<GateOptions, 'upstream' | 'env'> {
  return { upstream: [process.execPath, helperScript('upstream.js')], env: { UPSTREAM_TOOLS: tools, RECORD_FILE: record, ...env } };
}

export interface RunningGate {
  client: Client;
  pid: number;
  /** Everything the gate (and the upstream through it) wrote to stderr. */
  stderr(): string;
  /** Transport-level errors the host's SDK reported (e.g. a line that is not JSON). */
  hostErrors: string[];
  /** Resolves once the gate's stdio closed (it exited). */
  exited: Promise<void>;
  /** Close the host's side; resolves once the gate process is gone, so a gate started next on
   *  the same home really is a restart. */
  close(): Promise<void>;
}

// A failing test must not leave gates behind to keep the test process (and the run) alive.
const running = new Set<() => Promise<void>>();
after(async () => {
  await Promise.allSettled([...running].map((close) => close()));
});

/** Start a gate and connect the host. A gate that does not come up fails with its stderr. */
export async function startGate(o: GateOptions): Promise<RunningGate> {
  const command = o.under ? [...o.under, process.execPath, ...gateArgs(o)] : [process.execPath, ...gateArgs(o)];
  const transport = new StdioClientTransport({
    command: command[0],
    args: command.slice(1),
    stderr: 'pipe',
    env: { ...(process.env as Record<string, string>), ...(o.env ?? {}) },
  });
  let err = '';
  transport.stderr?.on('data', (d: Buffer) => (err += d.toString()));
  const client = new Client({ name: 'cloakpipe-test-host', version: '1.0.0' });
  try {
    await client.connect(transport, { timeout: o.startTimeoutMs ?? 120_000 });
  } catch (e) {
    await new Promise((r) => setTimeout(r, 200)); // the rest of stderr
    await client.close().catch(() => undefined);
    throw new Error(`the gate did not start: ${(e as Error).message}\n${err}`);
  }
  const hostErrors: string[] = [];
  client.onerror = (e) => void hostErrors.push(String((e as Error)?.message ?? e));
  let gone!: () => void;
  const exited = new Promise<void>((r) => (gone = r));
  const prevClose = transport.onclose;
  transport.onclose = () => {
    prevClose?.();
    gone();
  };
  const pid = transport.pid ?? -1;
  const close = async () => {
    running.delete(close);
    await client.close().catch(() => undefined);
    for (const end = Date.now() + 30_000; pid > 0 && alive(pid) && Date.now() < end; ) await new Promise((r) => setTimeout(r, 25));
  };
  running.add(close);
  return { client, pid, stderr: () => err, hostErrors, exited, close };
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

export type Outcome =
  | { ok: true; text: string; result: unknown }
  | { ok: false; code: number; reason: string; detail: string; data: Record<string, unknown>; message: string };

/** One tools/call through the gate: the answer's text, or the refusal's reason and detail. */
export async function call(
  g: { client: Client },
  name: string,
  args: Record<string, unknown>,
  meta?: Record<string, unknown>,
  timeoutMs = 20_000,
): Promise<Outcome> {
  try {
    const result = await g.client.callTool({ name, arguments: args, ...(meta ? { _meta: meta } : {}) }, undefined, { timeout: timeoutMs });
    const content = (result as { content?: { text?: string }[] }).content ?? [];
    return { ok: true, text: content.map((c) => c.text ?? '').join(''), result };
  } catch (e) {
    if (!(e instanceof McpError)) throw e;
    const data = (e.data ?? {}) as Record<string, unknown>;
    return { ok: false, code: e.code, reason: String(data.reason ?? ''), detail: String(data.detail ?? ''), data, message: e.message };
  }
}

/** Assert-friendly view of a refusal: reason and detail, or 'ok'. */
export function summary(o: Outcome): string {
  return o.ok ? 'ok' : `${o.reason}: ${o.detail}`;
}

/** The upstream's own record of the calls that reached its tools (one JSON line each), in order. */
export function readRecord(file: string, tool?: string): { tool: string; arguments: Record<string, unknown>; pid: number }[] {
  if (!existsSync(file)) return [];
  const all = readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
  return tool ? all.filter((r) => r.tool === tool) : all;
}

export function ledgerOf(home: string): Record<string, any>[] {
  const r = cloakpipe(['ledger', 'show', '--json', '--home', home]);
  if (r.status !== 0) throw new Error(`ledger show failed: ${r.stderr}`);
  return r.stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l));
}

/**
 * The ledger, read by the real binary in a child this process does not wait on, for tests that
 * hold kept-alive HTTP connections to a gate: a spawnSync stalls this event loop for the whole
 * read, so a socket outlives the gate's 5 s idle close unseen, and the next request goes out on
 * a closed socket ('other side closed') under load.
 */
export async function ledgerOfAsync(home: string): Promise<Record<string, any>[]> {
  const { stdout } = await promisify(execFile)(process.execPath, [CLI, 'ledger', 'show', '--json', '--home', home], { timeout: 30_000, maxBuffer: 64 << 20 });
  return stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l));
}

export const decisions = (home: string) => ledgerOf(home).filter((e) => e.kind === 'decision');

/** Replace a file the way an operator or orchestrator should: write aside, then rename. */
export function replaceFile(path: string, text: string): void {
  writeFileSync(`${path}.tmp`, text);
  renameSync(`${path}.tmp`, path);
}

/** Replace a task context file (replaceFile). */
export function replaceContext(path: string, doc: object): void {
  replaceFile(path, JSON.stringify(doc));
}

export async function waitFor(cond: () => boolean, ms = 10_000, what = 'the condition'): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
