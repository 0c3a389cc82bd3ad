// Spaced: one call every --gap ms, as an agent calls a tool between two turns of its model, through
// direct, the relays, the gate and the two peers. overhead.js and peers.js send each call as soon
// as the last is answered, so every process stays awake; here each call finds every process of
// its path, and the disk, idle, which on a VM costs each wake-up and each fsync more. The paths
// take turns, one call each, so a change of load hits them alike.
// Usage: node dist/bench/spaced.js [--n 40] [--gap 200] [--warmup 300]
import { directPath, durableRelayPath, flags, gatePath, isMain, LineClient, loadNow, machine, mcpProxyPath, ms, ratio, relayPath, section, stats, supergatewayPath, table } from './lib.js';

export async function main() {
  const f = flags({ gap: { type: 'string' } }, { n: 40, warmup: 300 });
  const gap = Number(f.values.gap ?? 200);
  if (!Number.isFinite(gap) || gap < 0) throw new Error('--gap must be a number of milliseconds');
  const loadBefore = loadNow();
  const paths = [directPath(), relayPath(), durableRelayPath(), gatePath(), await supergatewayPath(), await mcpProxyPath()];
  const clients: LineClient[] = [];
  try {
    for (const p of paths) clients.push(await LineClient.start(p));
    for (const c of clients) await c.sequential(f.warmup); // the same settled processes as overhead.js
    const samples = clients.map(() => [] as number[]);
    for (let i = 0; i < f.n; i++)
      for (let j = 0; j < clients.length; j++) {
        await new Promise((r) => setTimeout(r, gap));
        samples[j].push(await clients[j].call());
      }
    const s = samples.map(stats);
    const direct = s[0].p50;
    const added = (j: number) => s[j].p50 - direct;
    const sg = paths.findIndex((p) => p.name.startsWith('supergateway'));
    const gate = paths.findIndex((p) => p.name.startsWith('gate'));
    const rows = paths.map((p, j) => [p.name, s[j].n, ms(s[j].p50), ms(s[j].p90), j === 0 ? '—' : ms(added(j)), j === 0 || j === sg ? '—' : ratio(added(j), added(sg))]);
    section(
      `Spaced: ${f.n} calls per path, one every ${gap} ms (warm-up ${f.warmup} back to back), in turns`,
      `${machine()}\nload before the run: ${loadBefore}\n\n${table(['path', 'calls', 'p50 ms', 'p90 ms', 'added p50 ms', "added p50 vs supergateway's"], rows)}\n\nThe gate adds ${ms(added(gate))} ms here against ${ms(added(sg))} ms for supergateway (${ratio(added(gate), added(sg))}). Not one of issue 16's targets (those are measured back to back): the same paths with idle processes between calls.`,
    );
  } finally {
    for (const c of clients) await c.close().catch(() => undefined);
  }
}

if (isMain(import.meta.url)) await main();
