// Peers: the overhead run through what a user would otherwise put in the path, the npm
// packages supergateway and mcp-proxy, beside direct, the relay, the durable relay (the floor
// of a record made durable before forwarding) and the gate, same client, same upstream,
// interleaved. Neither peer relays stdio → stdio in one process (both turn a stdio server into
// HTTP and back); each is measured as the pair a stdio host would need.
// Usage: node dist/bench/peers.js [--n 2000] [--warmup 5000] [--json]
import { reportTarget, ms, directPath, durableRelayPath, flags, SETTLED_WARMUP, gatePath, isMain, loadNow, machine, mcpProxyPath, relayPath, section, supergatewayPath, table } from './lib.js';
import { durableFloor, measureSequential, overheadTable } from './overhead.js';

export async function main() {
  const f = flags({ chunk: { type: 'string' } }, { n: 2000, warmup: SETTLED_WARMUP });
  const chunk = f.values.chunk ? Number(f.values.chunk) : 250;
  const loadBefore = loadNow();
  const paths = [directPath(), relayPath(), durableRelayPath(), gatePath(), await supergatewayPath(), await mcpProxyPath()];
  const results = await measureSequential(paths, f.n, f.warmup, chunk);
  const direct = results[0].stats.p50;
  const gateAdded = results[3].stats.p50 - direct;
  const sgAdded = results[4].stats.p50 - direct;
  const r = gateAdded / sgAdded;
  const floor = durableFloor(results)!.p50 / sgAdded;
  reportTarget({ target: "gate vs supergateway's added p50", goal: '< 0.5×', measured: `${r.toFixed(2)}× (${ms(gateAdded)} vs ${ms(sgAdded)} ms; floor ${floor.toFixed(2)}×)`, met: sgAdded > 0 && r < 0.5 });
  if (f.json) return void process.stdout.write(JSON.stringify({ machine: machine(), loadBefore, results }) + '\n');
  const notes = table(
    ['peer', 'stdio → stdio?', 'how it was measured'],
    [
      ['supergateway 4.0.0', 'no', paths[4].note!],
      ['mcp-proxy 6.7.19', 'no', paths[5].note!],
    ],
  );
  section(`Peers: ${f.n} sequential tools/call round trips (warm-up ${f.warmup}, interleaved in chunks of ${chunk})`, `${machine()}\nload before the run: ${loadBefore}\n\n${overheadTable(results)}\n\n${notes}`);
}

if (isMain(import.meta.url)) await main();
