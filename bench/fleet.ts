// A fleet on PostgreSQL against one gate on SQLite, in the same run: calls/s, latency added over
// the bare upstream, and CPU per call of each process (every gate, and PostgreSQL's backends),
// with 1, 2 and 4 gates sharing one database. Each gate is the real binary with its own home and
// key (`init --store … --gate-id`), driven by its own client at the same number of calls in
// flight; first with one task for the whole fleet (every decision counts the same rate windows,
// the row a fleet serializes on, ADR 016), then with a task per gate (the fleet partitioned by
// task: no row is shared by two gates' decisions). PostgreSQL runs on this machine too: its CPU is the
// gates' CPU, so the figures are a floor for a database on its own host.
// Usage: node dist/bench/fleet.js [--n 2000] [--gates 1,2,4] [--in-flight 16] [--json]
//        PostgreSQL: $CLOAKPIPE_BENCH_PG or $CLOAKPIPE_TEST_PG (postgres://…), else a cluster
//        of its own from scripts/postgres.sh, stopped at the end.
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { CLI, CONTEXT, directPath, flags, gateArgv, gateFiles, GATE_NODE_FLAGS, isMain, LineClient, loadNow, machine, ms, num, ROOT, section, stats, table, tempDir, upstreamArgv, type Path } from './lib.js';

const CLK_TCK = Number(process.env.CLK_TCK ?? 100);

export interface FleetRow {
  store: 'sqlite' | 'postgres';
  gates: number;
  /** One task for the whole fleet (its rate row serializes every decision), or a task per gate. */
  tasks: 'shared' | 'per gate';
  inFlight: number;
  perSecond: number;
  p50: number;
  p99: number;
  /** p50 over the bare upstream's p50 at the same calls in flight. */
  addedP50: number;
  /** CPU µs per call of each gate process (its own calls). */
  gateCpuUs: number[];
  /** CPU µs per call (all gates' calls) of PostgreSQL's backends serving the gates. */
  pgCpuUs: number | null;
}

function procCpuMs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(f[11]) + Number(f[12])) * 1000) / CLK_TCK;
  } catch {
    return NaN;
  }
}

async function query<R extends pg.QueryResultRow>(url: string, text: string): Promise<R[]> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query<R>(text)).rows;
  } finally {
    await c.end();
  }
}

/** A new database on the server of `base`. */
async function database(base: string): Promise<string> {
  const name = `bench_fleet_${Date.now().toString(36)}_${Math.floor(Math.random() * 1e6)}`;
  await query(base, `CREATE DATABASE ${name}`);
  const u = new URL(base);
  u.pathname = `/${name}`;
  return u.toString();
}

function fleetPaths(url: string, gates: number, taskPerGate: boolean): Path[] {
  return Array.from({ length: gates }, (_, i) => {
    const g = { ...gateFiles(), home: join(tempDir('cloakpipe-bench-fleet-'), 'home') };
    if (taskPerGate) writeFileSync(g.context, JSON.stringify({ task: { ...CONTEXT.task, id: `bench-task-gate-${i}` } }));
    const r = spawnSync(process.execPath, [CLI, 'init', '--home', g.home, '--store', url, '--gate-id', `bench-${i}`], { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`init --store failed: ${r.stderr}`);
    const [cli, command, ...rest] = gateArgv(g, upstreamArgv());
    return { name: `gate ${i}`, argv: [process.execPath, ...GATE_NODE_FLAGS, cli, command, '--store', url, ...rest] };
  });
}

/** `n` calls over every client at once, `inFlight` outstanding on each. */
async function drive(clients: LineClient[], n: number, inFlight: number): Promise<{ perSecond: number; latencies: number[] }> {
  const each = Math.max(1, Math.floor(n / clients.length));
  const t = performance.now();
  const runs = await Promise.all(clients.map((c) => c.concurrent(each, inFlight)));
  const elapsed = (performance.now() - t) / 1000;
  return { perSecond: (each * clients.length) / elapsed, latencies: runs.flatMap((r) => r.latencies) };
}

async function backendPids(url: string): Promise<number[]> {
  const db = new URL(url).pathname.slice(1);
  return (await query<{ pid: number }>(url, `SELECT pid FROM pg_stat_activity WHERE datname = '${db}' AND pid <> pg_backend_pid()`)).map((r) => r.pid);
}

export async function measureFleet(base: string, counts: number[], n: number, warmup: number, inFlight: number): Promise<FleetRow[]> {
  const rows: FleetRow[] = [];
  const direct = await LineClient.start(directPath());
  let directP50: number;
  try {
    await direct.concurrent(warmup, inFlight);
    directP50 = stats((await direct.concurrent(n, inFlight)).latencies).p50;
  } finally {
    await direct.close();
  }
  const configs: { store: 'sqlite' | 'postgres'; gates: number; tasks: FleetRow['tasks'] }[] = [
    { store: 'sqlite', gates: 1, tasks: 'shared' },
    ...counts.map((g) => ({ store: 'postgres' as const, gates: g, tasks: 'shared' as const })),
    ...counts.filter((g) => g > 1).map((g) => ({ store: 'postgres' as const, gates: g, tasks: 'per gate' as const })),
  ];
  for (const cfg of configs) {
    const url = cfg.store === 'postgres' ? await database(base) : null;
    const paths = url ? fleetPaths(url, cfg.gates, cfg.tasks === 'per gate') : [{ name: 'gate', argv: [process.execPath, ...GATE_NODE_FLAGS, ...gateArgv(gateFiles(), upstreamArgv())] }];
    const clients: LineClient[] = [];
    try {
      for (const p of paths) clients.push(await LineClient.start(p));
      await drive(clients, warmup * clients.length, inFlight);
      const pids = url ? await backendPids(url) : [];
      const gate0 = clients.map((c) => c.cpuMs());
      const pg0 = pids.reduce((a, p) => a + procCpuMs(p), 0);
      const r = await drive(clients, n, inFlight);
      const total = Math.max(1, Math.floor(n / clients.length)) * clients.length;
      const s = stats(r.latencies);
      rows.push({
        store: cfg.store,
        gates: cfg.gates,
        tasks: cfg.tasks,
        inFlight,
        perSecond: r.perSecond,
        p50: s.p50,
        p99: s.p99,
        addedP50: s.p50 - directP50,
        gateCpuUs: clients.map((c, i) => ((c.cpuMs() - gate0[i]) * 1000) / (total / clients.length)),
        pgCpuUs: url ? ((pids.reduce((a, p) => a + procCpuMs(p), 0) - pg0) * 1000) / total : null,
      });
    } finally {
      await Promise.all(clients.map((c) => c.close()));
      if (url) await query(base, `DROP DATABASE IF EXISTS ${new URL(url).pathname.slice(1)} WITH (FORCE)`).catch(() => undefined);
    }
  }
  return rows;
}

export function fleetTable(rows: FleetRow[]): string {
  const cpu = (x: number) => (Number.isFinite(x) ? x.toFixed(0) : '?');
  return (
    table(
      ['store', 'gates', 'tasks', 'in flight per gate', 'calls/s (all gates)', 'p50 ms', 'p99 ms', 'added p50 ms', 'CPU µs/call per gate', 'PostgreSQL CPU µs/call'],
      rows.map((r) => [
        r.store,
        r.gates,
        r.tasks,
        r.inFlight,
        num(r.perSecond),
        ms(r.p50),
        ms(r.p99),
        ms(r.addedP50),
        r.gateCpuUs.map(cpu).join(' / '),
        r.pgCpuUs === null ? '-' : cpu(r.pgCpuUs),
      ]),
    ) +
    '\n\nadded p50: the p50 over the bare upstream\'s p50 at the same calls in flight. CPU µs/call: user + system CPU of each gate process per call it served, and of the PostgreSQL backends serving the gates per call of the whole fleet, from /proc (10 ms ticks). Every gate and PostgreSQL share this machine\'s cores.'
  );
}

/** The PostgreSQL to measure against: given, or a cluster of this run's own. */
function server(): { url: string; stop: () => void } {
  const given = process.env.CLOAKPIPE_BENCH_PG ?? process.env.CLOAKPIPE_TEST_PG;
  if (given) return { url: given, stop: () => undefined };
  const dir = tempDir('cloakpipe-bench-pg-');
  const script = join(ROOT, 'scripts', 'postgres.sh');
  const url = execFileSync('bash', [script, 'start', dir], { encoding: 'utf8' }).trim();
  return { url, stop: () => void execFileSync('bash', [script, 'stop', dir]) };
}

export async function main() {
  const f = flags({ gates: { type: 'string' }, 'in-flight': { type: 'string' } }, { n: 2000 });
  const counts = f.values.gates ? String(f.values.gates).split(',').map(Number) : [1, 2, 4];
  const inFlight = f.values['in-flight'] ? Number(f.values['in-flight']) : 16;
  if (counts.some((g) => !Number.isSafeInteger(g) || g < 1) || !Number.isSafeInteger(inFlight) || inFlight < 1) throw new Error('--gates and --in-flight take positive integers');
  const loadBefore = loadNow();
  const pgServer = server();
  let rows: FleetRow[];
  try {
    rows = await measureFleet(pgServer.url, counts, f.n, f.warmup, inFlight);
  } finally {
    pgServer.stop();
  }
  if (f.json) return void process.stdout.write(JSON.stringify({ machine: machine(), loadBefore, rows }) + '\n');
  section(`Fleet: ${f.n} calls per configuration over all its gates (warm-up ${f.warmup} per gate), one SQLite gate against ${counts.join(', ')} gates on one PostgreSQL`, `${machine()}\nload before the run: ${loadBefore}\n\n${fleetTable(rows)}`);
}

if (isMain(import.meta.url)) await main();
