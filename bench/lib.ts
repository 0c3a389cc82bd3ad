// Shared pieces of the benchmarks: a raw JSON-RPC line client over a child's stdio, the
// paths under test (direct, pass-through relay, the gate, the npm peers), statistics and
// tables. Every figure is measured with this one client, so baseline and gate differ only in
// what sits between the client and the upstream.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { appendFileSync, mkdtempSync, writeFileSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { cpus, freemem, loadavg, tmpdir, totalmem } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { GATE_NODE_FLAGS as SHIPPED_NODE_FLAGS } from '../src/cli/node-flags.js';

/** The compiled tree the scripts run from (DIST/bench/*.js) and the directory above it, which
 *  holds node_modules. A copy of dist/ beside a node_modules link benchmarks a fixed build
 *  while the working tree keeps changing. */
export const BENCH_DIST = dirname(fileURLToPath(import.meta.url));
export const DIST = resolve(BENCH_DIST, '..');
export const ROOT = resolve(DIST, '..');
export const CLI = join(DIST, 'src/cli/main.js');
export const UPSTREAM = join(BENCH_DIST, 'upstream.js');
export const RELAY = join(BENCH_DIST, 'relay.js');
export const DURABLE_RELAY = join(BENCH_DIST, 'durable-relay.js');
export const MCP_PROXY_STDIO = join(BENCH_DIST, 'mcp-proxy-stdio.js');
export const SUPERGATEWAY = join(ROOT, 'node_modules/supergateway/dist/index.js');
export const MCP_PROXY = join(ROOT, 'node_modules/mcp-proxy/dist/bin/mcp-proxy.mjs');

// ---------------------------------------------------------------------------------------------
// Options: every script takes the same flags; tests pass tiny values.

export interface BenchFlags {
  n: number;
  warmup: number;
  json: boolean;
  values: Record<string, string | boolean | undefined>;
}

export function flags(extra: Record<string, { type: 'string' | 'boolean'; default?: string | boolean }> = {}, defaults: { n: number; warmup?: number } = { n: 5000 }): BenchFlags {
  const { values } = parseArgs({
    args: process.argv.slice(2),
    options: {
      n: { type: 'string' },
      warmup: { type: 'string' },
      json: { type: 'boolean', default: false },
      ...extra,
    },
    allowPositionals: false,
  });
  const n = values.n !== undefined ? Number(values.n) : defaults.n;
  const warmup = values.warmup !== undefined ? Number(values.warmup) : (defaults.warmup ?? Math.min(500, Math.max(10, Math.floor(n / 10))));
  if (!Number.isSafeInteger(n) || n < 1) throw new Error('--n must be a positive integer');
  if (!Number.isSafeInteger(warmup) || warmup < 0) throw new Error('--warmup must be a non-negative integer');
  return { n, warmup, json: values.json as boolean, values: values as Record<string, string | boolean | undefined> };
}

/**
 * Calls each path gets before one-call-in-flight latency is measured. A fresh gate's JIT keeps
 * compiling (TurboFan, Cedar's Wasm tier-up) for its first few thousand calls: here its added
 * p50 fell from 1.13 ms over the first 500 calls to 0.67–0.72 ms from about 4,000 on, and the
 * gate runs for hours. So latency figures are of the settled gate; the warm-up's own figure is
 * printed beside them (docs/performance.md).
 */
export const SETTLED_WARMUP = 5000;

// ---------------------------------------------------------------------------------------------
// The machine, printed with every table: figures under load are pessimistic.

export function machine(): string {
  const [l1, l5, l15] = loadavg().map((x) => x.toFixed(2));
  return `node ${process.version}, ${cpus().length} cores (${cpus()[0]?.model ?? '?'}), ${(totalmem() / 2 ** 30).toFixed(1)} GiB RAM (${(freemem() / 2 ** 30).toFixed(1)} free), load ${l1} ${l5} ${l15}, ${new Date().toISOString()}; gate node flags: ${GATE_NODE_FLAGS.join(' ') || '(none)'}${idlePolling()}`;
}

/**
 * How an idle CPU of this (virtual) machine waits, when Linux says: in a VM with the haltpoll
 * idle driver and guest_halt_poll_ns 0, every idle CPU halts at once and each wake-up costs a
 * hypervisor round trip, which one call in flight pays at each hop (docs/performance.md).
 */
function idlePolling(): string {
  const read = (p: string) => {
    try {
      return readFileSync(p, 'utf8').trim();
    } catch {
      return null;
    }
  };
  const driver = read('/sys/devices/system/cpu/cpuidle/current_driver');
  if (driver === null) return '';
  const poll = read('/sys/module/haltpoll/parameters/guest_halt_poll_ns');
  return `; cpuidle ${driver}${poll !== null ? `, guest_halt_poll_ns ${poll}` : ''}`;
}

export function loadNow(): string {
  return loadavg()
    .map((x) => x.toFixed(2))
    .join(' ');
}

// ---------------------------------------------------------------------------------------------
// The targets of issue 16: each script reports the ones it measures; all.ts prints them in one
// table at the end of the run ($BENCH_TARGETS names the file they are collected in).

export interface TargetFigure {
  target: string;
  goal: string;
  measured: string;
  met: boolean;
  /** The 1-min load average when the figure was taken. */
  load: string;
}

export function reportTarget(t: Omit<TargetFigure, 'load'>): void {
  const file = process.env.BENCH_TARGETS;
  if (!file) return;
  appendFileSync(file, JSON.stringify({ ...t, load: loadavg()[0].toFixed(2) }) + '\n');
}

/** The order of the issue's table. */
export const TARGET_ORDER = [
  'added p50, 1 in flight',
  'added p99, 1 in flight',
  'gate CPU per call, 64 in flight',
  'calls/s, 64 in flight',
  "gate vs supergateway's added p50",
  'verify entries/s vs raw Ed25519, all cores',
  'token key calls/s vs file key, 64 in flight',
  'token key main-thread calls/s ceiling vs file key',
  'HTTP door vs pure HTTP transports, added p50',
  'HTTP door calls/s vs pure HTTP transports, 64 in flight',
  'HTTP door added p50 beyond the gate floor vs pure transports',
];

// ---------------------------------------------------------------------------------------------
// Statistics.

export interface Stats {
  n: number;
  mean: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
}

export function stats(samplesMs: number[]): Stats {
  const s = Float64Array.from(samplesMs).sort();
  const q = (p: number) => s[Math.min(s.length - 1, Math.max(0, Math.ceil(p * s.length) - 1))];
  let sum = 0;
  for (const x of s) sum += x;
  return { n: s.length, mean: sum / s.length, p50: q(0.5), p90: q(0.9), p99: q(0.99), max: s[s.length - 1] };
}

export const ms = (x: number) => (x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(3));
export const us = (xMs: number) => (xMs * 1000).toFixed(1);
export const ratio = (a: number, b: number) => (b > 0 ? (a / b).toFixed(2) + '×' : 'n/a');
export const num = (x: number) => (x >= 100 ? Math.round(x).toLocaleString('en-US') : x.toFixed(1));

/** A GitHub-flavoured Markdown table: pastes straight into docs/performance.md. */
export function table(headers: string[], rows: (string | number)[][]): string {
  const cells = [headers, ...rows.map((r) => r.map(String))];
  const w = headers.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? '').length)));
  const line = (r: string[]) => '| ' + r.map((c, i) => (i === 0 ? c.padEnd(w[i]) : c.padStart(w[i]))).join(' | ') + ' |';
  return [line(headers), '| ' + w.map((x, i) => (i === 0 ? '-'.repeat(x) : '-'.repeat(Math.max(1, x - 1)) + ':')).join(' | ') + ' |', ...cells.slice(1).map(line)].join('\n');
}

// ---------------------------------------------------------------------------------------------
// The gate's inputs: one tool, a Cedar policy with conditions that read the rate windows and
// the arguments (so Cedar really evaluates), a task context with an id (rates are per task).

export const MANIFEST = `version: 1
release: bench@1
tools:
  echo:
    effect: read
    arguments:
      message: { type: string, max_len: 200, required: true }
`;

export const POLICY = `@id("echo-allowed")
permit (principal, action == Action::"call_tool", resource == Tool::"echo")
when { resource.effect == "read" };

@id("echo-rate")
forbid (principal, action == Action::"call_tool", resource == Tool::"echo")
when { context.calls.minute >= 100000000 };

@id("echo-no-secrets")
forbid (principal, action == Action::"call_tool", resource)
when { context has args && context.args has message && context.args.message like "*BEGIN PRIVATE KEY*" };
`;

export const CONTEXT = { task: { id: 'bench-task-1', tier: 'standard' } };

/** Clock ticks per second of /proc/PID/stat (USER_HZ: 100 on Linux, whatever the kernel's HZ). */
const CLK_TCK = Number(process.env.CLK_TCK ?? 100);

export function tempDir(prefix: string): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

export interface GateFiles {
  home: string;
  manifest: string;
  policy: string;
  context: string;
}

/** A fresh gate home (cloakpipe init) and its input files. */
export function gateFiles(): GateFiles {
  const dir = tempDir('cloakpipe-bench-');
  const home = join(dir, 'home');
  const r = spawnSync(process.execPath, [CLI, 'init', '--home', home], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`cloakpipe init failed: ${r.stderr}`);
  const f = (name: string, text: string) => {
    const p = join(dir, name);
    writeFileSync(p, text);
    return p;
  };
  return { home, manifest: f('m.yaml', MANIFEST), policy: f('p.cedar', POLICY), context: f('c.json', JSON.stringify(CONTEXT)) };
}

export function gateArgv(g: GateFiles, upstream: string[]): string[] {
  return [CLI, 'mcp-proxy', '--home', g.home, '--manifest', g.manifest, '--policy', g.policy, '--context', g.context, '--', ...upstream];
}

// ---------------------------------------------------------------------------------------------
// The paths under test. Each is a command line whose stdin/stdout speak MCP over stdio, plus
// any helper processes it needs (the peers' HTTP side).

export interface Path {
  name: string;
  argv: string[];
  /** Started before the client's child; stopped after it. */
  helpers?: () => Promise<ChildProcess[]>;
  /** Why this path is not plain stdio → stdio (peers). */
  note?: string;
}

export const upstreamArgv = (): string[] => [process.execPath, UPSTREAM];

/**
 * The gate's Node options: those cloakpipe writes on a gate's command line (src/cli/node-flags.ts,
 * ADR 067), so the benchmarks run the gate as `wrap` starts it. (The gate turns off V8's JS → Wasm
 * call inlining itself, in src/policy/v8-guard.ts: problem P1 of docs/performance.md.)
 * BENCH_GATE_NODE_FLAGS="--flag ..." replaces them, for experiments only ("" runs the gate with
 * Node's defaults).
 */
export const GATE_NODE_FLAGS: string[] = process.env.BENCH_GATE_NODE_FLAGS === undefined ? [...SHIPPED_NODE_FLAGS] : process.env.BENCH_GATE_NODE_FLAGS.split(' ').filter(Boolean);

export const directPath = (): Path => ({ name: 'direct', argv: upstreamArgv() });
export const relayPath = (): Path => ({ name: 'relay (line copy)', argv: [process.execPath, RELAY, '--', ...upstreamArgv()] });
/** The floor of a gate that makes a record durable before it forwards (bench/durable-relay.ts). */
export const durableRelayPath = (): Path => ({ name: 'durable relay (a signed, fsync\'d record per call)', argv: [process.execPath, DURABLE_RELAY, '--', ...upstreamArgv()] });
/** The durable relay with two signed records per call in its commit: the floor of a gate whose
 *  lone call's group holds two entries, the call's decision and the previous call's result (ADR 017). */
export const twoRecordRelayPath = (): Path => ({ name: 'durable relay, two signed records per call (a decision, a result)', argv: [process.execPath, DURABLE_RELAY, '--records', '2', '--', ...upstreamArgv()] });
/** The durable relay without its fsync (not durable): beside it, what the disk costs here. */
export const unsyncedRelayPath = (): Path => ({ name: 'the same relay without its fsync (not durable)', argv: [process.execPath, DURABLE_RELAY, '--no-fsync', '--', ...upstreamArgv()] });
export const gatePath = (g: GateFiles = gateFiles()): Path => ({ name: 'gate (enforce, Cedar, ledger, durable)', argv: [process.execPath, ...GATE_NODE_FLAGS, ...gateArgv(g, upstreamArgv())] });

export function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const s = createServer();
    s.once('error', rej);
    s.listen(0, '127.0.0.1', () => {
      const a = s.address();
      const port = typeof a === 'object' && a ? a.port : 0;
      s.close(() => res(port));
    });
  });
}

async function waitForPort(port: number, child: ChildProcess, timeoutMs = 30_000): Promise<void> {
  const { connect } = await import('node:net');
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    if (child.exitCode !== null) throw new Error(`helper exited (${child.exitCode}) before listening on ${port}`);
    const ok = await new Promise<boolean>((r) => {
      const c = connect(port, '127.0.0.1');
      c.once('connect', () => (c.destroy(), r(true)));
      c.once('error', () => r(false));
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`nothing listening on ${port} after ${timeoutMs} ms`);
}

function spawnHelper(argv: string[]): ChildProcess {
  const c = spawn(argv[0], argv.slice(1), { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  c.stderr!.on('data', (d: Buffer) => (err = (err + d.toString()).slice(-4000)));
  (c as ChildProcess & { errTail?: () => string }).errTail = () => err;
  return c;
}

/**
 * supergateway cannot relay stdio → stdio in one process: it turns a stdio server into SSE /
 * WebSocket / Streamable HTTP, or an HTTP server into stdio. What a stdio host can put in the
 * path is the pair: `--stdio UPSTREAM` (stdio → SSE) and `--sse URL` (SSE → stdio).
 */
export async function supergatewayPath(): Promise<Path> {
  const port = await freePort();
  const upstreamCmd = upstreamArgv().map((a) => JSON.stringify(a)).join(' ');
  return {
    name: 'supergateway (stdio→SSE→stdio, 2 procs)',
    note: 'supergateway has no stdio→stdio mode; measured as the pair --stdio (server side, SSE) + --sse (client side, stdio)',
    argv: [process.execPath, SUPERGATEWAY, '--sse', `http://127.0.0.1:${port}/sse`, '--logLevel', 'none'],
    helpers: async () => {
      const server = spawnHelper([process.execPath, SUPERGATEWAY, '--stdio', upstreamCmd, '--port', String(port), '--logLevel', 'none']);
      await waitForPort(port, server);
      return [server];
    },
  };
}

/**
 * mcp-proxy's CLI serves a stdio server over SSE / Streamable HTTP only; its library's
 * startStdioServer goes the other way (bench/mcp-proxy-stdio.ts). A stdio host puts both in
 * the path: `mcp-proxy --server stream -- UPSTREAM` and startStdioServer(HTTPStream).
 */
export async function mcpProxyPath(): Promise<Path> {
  const port = await freePort();
  return {
    name: 'mcp-proxy (stdio→HTTP stream→stdio, 2 procs)',
    note: 'mcp-proxy has no stdio→stdio mode; measured as its CLI (--server stream) + its library startStdioServer (HTTPStream)',
    argv: [process.execPath, MCP_PROXY_STDIO, `http://127.0.0.1:${port}/mcp`],
    helpers: async () => {
      const server = spawnHelper([process.execPath, MCP_PROXY, '--port', String(port), '--host', '127.0.0.1', '--server', 'stream', '--', ...upstreamArgv()]);
      await waitForPort(port, server);
      return [server];
    },
  };
}

// ---------------------------------------------------------------------------------------------
// The raw line client: writes one JSON-RPC line per call, matches replies by id.

export const callLine = (id: number, message = 'hello from the benchmark'): string =>
  `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"echo","arguments":{"message":"${message}"}}}\n`;

export class LineClient {
  readonly child: ChildProcess;
  private buf = '';
  private waiting = new Map<number | string, (line: string) => void>();
  private stderrTail = '';
  private helpers: ChildProcess[] = [];
  private nextId = 1;
  private exited = false;

  private constructor(argv: string[], helpers: ChildProcess[]) {
    this.helpers = helpers;
    this.child = spawn(argv[0], argv.slice(1), { stdio: ['pipe', 'pipe', 'pipe'] });
    this.child.stdout!.setEncoding('utf8');
    this.child.stdout!.on('data', (d: string) => {
      this.buf += d;
      let i: number;
      while ((i = this.buf.indexOf('\n')) >= 0) {
        const line = this.buf.slice(0, i);
        this.buf = this.buf.slice(i + 1);
        this.onLine(line);
      }
    });
    // Drained like a host would (the gate writes one log line per decision to stderr).
    this.child.stderr!.on('data', (d: Buffer) => {
      const text = d.toString();
      this.stderrTail = (this.stderrTail + text).slice(-4000);
      if (this.timings) this.collectTimings(text);
    });
    this.child.on('exit', () => {
      this.exited = true;
      for (const w of this.waiting.values()) w('');
      this.waiting.clear();
    });
  }

  static async start(path: Path): Promise<LineClient> {
    const helpers = path.helpers ? await path.helpers() : [];
    const c = new LineClient(path.argv, helpers);
    await c.initialize();
    return c;
  }

  private onLine(line: string) {
    // Replies carry the id early; a cheap scan avoids parsing notifications we do not wait for.
    const m = /"id":(\d+|"[^"]*")/.exec(line);
    if (!m) return;
    const id = m[1].startsWith('"') ? JSON.parse(m[1]) : Number(m[1]);
    const w = this.waiting.get(id);
    if (w) {
      this.waiting.delete(id);
      w(line);
    }
  }

  stderr(): string {
    return this.stderrTail;
  }

  /** The gate's own timings of each call (its `decision` log lines), once `timeCalls()` was called. */
  timings: { decide: number; commit: number; upstream: number }[] | null = null;
  private stderrPartial = '';

  timeCalls(): void {
    this.timings = [];
  }

  private collectTimings(text: string): void {
    const lines = (this.stderrPartial + text).split('\n');
    this.stderrPartial = lines.pop()!;
    for (const l of lines) {
      if (!l.includes('"event":"decision"')) continue;
      const f = JSON.parse(l) as { decide_ms?: number; commit_ms?: number; upstream_ms?: number };
      if (f.decide_ms !== undefined && f.commit_ms !== undefined && f.upstream_ms !== undefined) this.timings!.push({ decide: f.decide_ms, commit: f.commit_ms, upstream: f.upstream_ms });
    }
  }

  /** CPU time (user + system, ms) the child has used so far: the process the client talks to,
   *  not its own children. Load-independent where wall-clock figures are not. Linux only. */
  cpuMs(thread: 'all' | 'main' = 'all'): number {
    try {
      // The main thread's own line: the one thread that parses, decides and writes every call.
      const path = thread === 'main' ? `/proc/${this.child.pid}/task/${this.child.pid}/stat` : `/proc/${this.child.pid}/stat`;
      const stat = readFileSync(path, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      return ((Number(f[11]) + Number(f[12])) * 1000) / CLK_TCK;
    } catch {
      return NaN;
    }
  }

  /** Send a raw line, resolve with the reply line carrying `id`. */
  request(id: number | string, line: string): Promise<string> {
    return new Promise((res, rej) => {
      if (this.exited) return rej(new Error(`child exited; stderr: ${this.stderrTail}`));
      this.waiting.set(id, (l) => (l === '' ? rej(new Error(`child exited; stderr: ${this.stderrTail}`)) : res(l)));
      this.child.stdin!.write(line);
    });
  }

  private async initialize() {
    const init = await this.request(
      'init',
      JSON.stringify({ jsonrpc: '2.0', id: 'init', method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'cloakpipe-bench', version: '1' } } }) + '\n',
    );
    if (!init.includes('"result"')) throw new Error(`initialize failed: ${init}`);
    this.child.stdin!.write('{"jsonrpc":"2.0","method":"notifications/initialized"}\n');
    // One call checked in full: the path really reaches the tool and answers.
    const r = JSON.parse(await this.request(0, callLine(0)));
    if (!r.result || r.result.isError) throw new Error(`first call failed: ${JSON.stringify(r)}; stderr: ${this.stderrTail}`);
  }

  /** One tools/call; resolves with its round-trip time in ms. */
  async call(): Promise<number> {
    const id = this.nextId++;
    const line = callLine(id);
    const t = performance.now();
    const reply = await this.request(id, line);
    const dt = performance.now() - t;
    if (!reply.includes('"result"')) throw new Error(`call ${id} failed: ${reply}`);
    return dt;
  }

  /** `count` sequential calls: round-trip times in ms. */
  async sequential(count: number): Promise<number[]> {
    const out = new Array<number>(count);
    for (let i = 0; i < count; i++) out[i] = await this.call();
    return out;
  }

  /** `count` calls with `inFlight` outstanding at all times: calls per second. */
  async concurrent(count: number, inFlight: number): Promise<{ perSecond: number; latencies: number[] }> {
    let started = 0;
    const latencies: number[] = [];
    const t = performance.now();
    const lane = async () => {
      while (started < count) {
        started++;
        latencies.push(await this.call());
      }
    };
    await Promise.all(Array.from({ length: Math.min(inFlight, count) }, lane));
    const elapsed = (performance.now() - t) / 1000;
    return { perSecond: count / elapsed, latencies };
  }

  async close(): Promise<void> {
    const exited = new Promise<void>((r) => (this.exited ? r() : this.child.once('exit', () => r())));
    this.child.stdin!.end();
    const kill = setTimeout(() => this.child.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(kill);
    for (const h of this.helpers) {
      if (h.exitCode === null) {
        const done = new Promise<void>((r) => h.once('exit', () => r()));
        h.kill('SIGTERM');
        const k = setTimeout(() => h.kill('SIGKILL'), 3000);
        await done;
        clearTimeout(k);
      }
    }
  }
}

/** Start a path, run `fn` against it, always stop it. */
export async function withPath<T>(path: Path, fn: (c: LineClient) => Promise<T>): Promise<T> {
  const c = await LineClient.start(path);
  try {
    return await fn(c);
  } finally {
    await c.close();
  }
}

export function readJson(p: string): unknown {
  return JSON.parse(readFileSync(p, 'utf8'));
}

/** Print a titled section. */
export function section(title: string, body: string) {
  process.stdout.write(`\n## ${title}\n\n${body}\n`);
}

/** Run `main` when the file is executed directly (not when all.ts imports it). */
export function isMain(metaUrl: string): boolean {
  return process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(metaUrl);
}
