// Overhead: N sequential tools/call round trips straight to the upstream, through the
// pass-through relay (the floor for any stdio proxy), through the durable relay (the floor for
// any proxy that makes a signed record durable before it forwards; with two records per call,
// the floor of the gate's own evidence at one call in flight) and through the gate
// (enforce mode, Cedar policy, signed ledger, durable commits). The paths run side by side,
// interleaved in chunks, so a change of machine load during the run hits all of them alike.
// Usage: node dist/bench/overhead.js [--n 5000] [--warmup 5000] [--chunk 250] [--json]
import { reportTarget, directPath, durableRelayPath, twoRecordRelayPath, unsyncedRelayPath, flags, SETTLED_WARMUP, gatePath, isMain, LineClient, loadNow, machine, ms, ratio, relayPath, section, stats, table, type Path, type Stats } from './lib.js';

export interface PathResult {
  name: string;
  note?: string;
  stats: Stats;
  /** CPU µs per call of the process the client talks to (the gate, the relay, the upstream). */
  cpuUsPerCall: number;
  /** p50 of the first and the last tenth of the calls, in order (state that grows with calls shows here). */
  firstTenthP50: number;
  lastTenthP50: number;
  /** The warm-up calls' own figures (null without warm-up). */
  warmup: Stats | null;
}

/** N sequential calls on each path, interleaved in chunks; the first path is the baseline. */
export async function measureSequential(paths: Path[], n: number, warmup: number, chunk = 250): Promise<PathResult[]> {
  const clients: LineClient[] = [];
  try {
    for (const p of paths) clients.push(await LineClient.start(p));
    const warm: number[][] = [];
    for (const c of clients) warm.push(await c.sequential(warmup));
    const samples: number[][] = clients.map(() => []);
    const cpu = clients.map(() => 0);
    for (let done = 0; done < n; done += chunk) {
      const k = Math.min(chunk, n - done);
      for (let i = 0; i < clients.length; i++) {
        const c0 = clients[i].cpuMs();
        samples[i].push(...(await clients[i].sequential(k)));
        cpu[i] += clients[i].cpuMs() - c0;
      }
    }
    return paths.map((p, i) => ({ name: p.name, note: p.note, stats: stats(samples[i]), cpuUsPerCall: (cpu[i] * 1000) / n, ...tenths(samples[i]), warmup: warmup > 0 ? stats(warm[i]) : null }));
  } finally {
    for (const c of clients) await c.close().catch(() => undefined);
  }
}

function tenths(s: number[]): { firstTenthP50: number; lastTenthP50: number } {
  const k = Math.max(1, Math.floor(s.length / 10));
  return { firstTenthP50: stats(s.slice(0, k)).p50, lastTenthP50: stats(s.slice(-k)).p50 };
}

export function overheadTable(results: PathResult[]): string {
  const base = results[0].stats;
  return table(
    ['path', 'calls', 'p50 ms', 'p90 ms', 'p99 ms', 'mean ms', 'added p50 ms', 'added p99 ms', 'p50 vs direct', 'CPU µs/call ¹'],
    results.map((r) => [
      r.name,
      r.stats.n,
      ms(r.stats.p50),
      ms(r.stats.p90),
      ms(r.stats.p99),
      ms(r.stats.mean),
      r === results[0] ? '—' : ms(r.stats.p50 - base.p50),
      r === results[0] ? '—' : ms(r.stats.p99 - base.p99),
      r === results[0] ? '1.00×' : ratio(r.stats.p50, base.p50),
      Number.isFinite(r.cpuUsPerCall) ? r.cpuUsPerCall.toFixed(0) : '?',
    ]),
  ) + '\n\n¹ user + system CPU of the process the client talks to (the upstream itself for direct; the relay, the gate or the peer\'s stdio side otherwise), from /proc, 10 ms ticks: it does not grow with machine load the way wall-clock latency does.';
}

export function targetsTable(results: PathResult[]): string {
  const direct = results.find((r) => r.name === 'direct')!.stats;
  const gate = results.find((r) => r.name.startsWith('gate'))!.stats;
  const relay = results.find((r) => r.name.startsWith('relay'));
  const addP50 = gate.p50 - direct.p50;
  const addP99 = gate.p99 - direct.p99;
  const rows: (string | number)[][] = [
    ['added p50 per gated call', '≤ 0.3 ms', `${ms(addP50)} ms`, addP50 <= 0.3 ? 'met' : 'MISSED'],
    ['added p99 per gated call', '≤ 1 ms', `${ms(addP99)} ms`, addP99 <= 1 ? 'met' : 'MISSED'],
  ];
  if (relay) rows.push(['of which any stdio hop (relay − direct, p50)', '—', `${ms(relay.stats.p50 - direct.p50)} ms`, 'floor']);
  const floor = durableFloor(results);
  if (floor) {
    rows.push(['floor: a signed record made durable before forwarding (durable relay − direct, p50)', '—', `${ms(floor.p50)} ms`, 'floor']);
    rows.push(['floor: the same, p99', '—', `${ms(floor.p99)} ms`, 'floor']);
    const unsynced = results.find((r) => r.name === unsyncedRelayPath().name);
    if (unsynced) rows.push(['of which the fsync (durable relay − the same without its fsync, p50)', '—', `${ms(floor.p50 + direct.p50 - unsynced.stats.p50)} ms`, 'floor']);
  }
  const two = durableFloor(results, twoRecordRelayPath());
  if (two) {
    rows.push(["floor of the gate's evidence: two signed records per call in one commit (that relay − direct, p50)", '—', `${ms(two.p50)} ms`, 'floor']);
    rows.push(["floor of the gate's evidence, p99", '—', `${ms(two.p99)} ms`, 'floor']);
  }
  const g = results.find((r) => r.name.startsWith('gate'))!;
  rows.push(['gate p50: first tenth of the calls → last tenth', '—', `${ms(g.firstTenthP50)} → ${ms(g.lastTenthP50)} ms`, 'drift']);
  const dw = results.find((r) => r.name === 'direct')!.warmup;
  if (g.warmup && dw) rows.push([`gate added p50 over its warm-up (its first ${g.warmup.n} calls, not in the figures above)`, '—', `${ms(g.warmup.p50 - dw.p50)} ms`, 'warm-up']);
  return table(['target', 'goal', 'measured', 'status'], rows);
}

/** What a durable relay (by default one record per call) adds to direct (p50, p99), when it was measured. */
export function durableFloor(results: PathResult[], relay: Path = durableRelayPath()): { p50: number; p99: number } | null {
  const direct = results.find((r) => r.name === 'direct')!.stats;
  const d = results.find((r) => r.name === relay.name);
  return d ? { p50: d.stats.p50 - direct.p50, p99: d.stats.p99 - direct.p99 } : null;
}

export async function main(argv = process.argv) {
  void argv;
  const f = flags({ chunk: { type: 'string' } }, { n: 5000, warmup: SETTLED_WARMUP });
  const chunk = f.values.chunk ? Number(f.values.chunk) : 250;
  const loadBefore = loadNow();
  const results = await measureSequential([directPath(), relayPath(), durableRelayPath(), twoRecordRelayPath(), unsyncedRelayPath(), gatePath()], f.n, f.warmup, chunk);
  const direct = results[0].stats;
  const gate = results.find((r) => r.name.startsWith('gate'))!.stats;
  const floor = durableFloor(results)!;
  const two = durableFloor(results, twoRecordRelayPath())!;
  reportTarget({ target: 'added p50, 1 in flight', goal: '≤ 0.3 ms', measured: `${ms(gate.p50 - direct.p50)} ms (floor ${ms(floor.p50)}, two records ${ms(two.p50)})`, met: gate.p50 - direct.p50 <= 0.3 });
  reportTarget({ target: 'added p99, 1 in flight', goal: '≤ 1 ms', measured: `${ms(gate.p99 - direct.p99)} ms (floor ${ms(floor.p99)}, two records ${ms(two.p99)})`, met: gate.p99 - direct.p99 <= 1 });
  if (f.json) return void process.stdout.write(JSON.stringify({ machine: machine(), loadBefore, results }) + '\n');
  section(`Overhead: ${f.n} sequential tools/call round trips (warm-up ${f.warmup}, interleaved in chunks of ${chunk})`, `${machine()}\nload before the run: ${loadBefore}\n\n${overheadTable(results)}\n\n${targetsTable(results)}`);
}

if (isMain(import.meta.url)) await main();
