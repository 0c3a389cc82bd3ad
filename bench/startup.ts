// Start-up: how long a host waits before its first tool call is answered, from the spawn of the
// command it was given, through the upstream alone, the line relay, the durable relay and the
// gate; and how long `cloakpipe --version` and `cloakpipe mcp-proxy --help` take beside a bare
// `node -e 0`. Each run is a fresh process (a host starts the gate once per session); the paths
// take turns, so a change of load hits them alike.
// Usage: node dist/bench/startup.js [--n 20]
import { spawn } from 'node:child_process';
import { CLI, callLine, directPath, durableRelayPath, flags, gatePath, isMain, loadNow, machine, ms, relayPath, section, stats, table, type Path } from './lib.js';

/** Spawn → the answer to one tools/call written at once (the gate reads it when it is ready). */
function firstAnswer(path: Path): Promise<number> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn(path.argv[0], path.argv.slice(1), { stdio: ['pipe', 'pipe', 'ignore'] });
    let out = '';
    child.stdout!.setEncoding('utf8');
    child.stdout!.on('data', (d: string) => {
      out += d;
      if (!out.includes('\n')) return;
      const t = performance.now() - t0;
      child.stdin!.end();
      child.once('exit', () => resolve(t));
    });
    child.once('error', reject);
    child.once('exit', (code) => (out.includes('\n') ? undefined : reject(new Error(`${path.name} exited ${code} before answering`))));
    child.stdin!.write(callLine(1) + '\n');
  });
}

/** Spawn → exit of a command that prints and leaves. */
function runToExit(argv: string[]): Promise<number> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn(argv[0], argv.slice(1), { stdio: ['ignore', 'ignore', 'ignore'] });
    child.once('error', reject);
    child.once('exit', (code) => (code === 0 ? resolve(performance.now() - t0) : reject(new Error(`${argv.slice(1).join(' ')} exited ${code}`))));
  });
}

export async function main() {
  const f = flags({}, { n: 20, warmup: 1 });
  const loadBefore = loadNow();
  const answered: [string, () => Promise<number>][] = [directPath(), relayPath(), durableRelayPath(), gatePath()].map((p) => [p.name, () => firstAnswer(p)]);
  const exited: [string, () => Promise<number>][] = [
    ['node -e 0', () => runToExit([process.execPath, '-e', '0'])],
    ['cloakpipe --version', () => runToExit([process.execPath, CLI, '--version'])],
    ['cloakpipe mcp-proxy --help', () => runToExit([process.execPath, CLI, 'mcp-proxy', '--help'])],
  ];
  const all = [...answered, ...exited];
  const samples = all.map(() => [] as number[]);
  for (let i = 0; i < f.warmup + f.n; i++) {
    for (let j = 0; j < all.length; j++) {
      const t = await all[j][1]();
      if (i >= f.warmup) samples[j].push(t);
    }
  }
  const s = samples.map(stats);
  const base = s[0].p50;
  const rows = all.map(([name], j) => [name, s[j].n, ms(s[j].p50), ms(s[j].p90), ms(Math.min(...samples[j])), j > 0 && j < answered.length ? ms(s[j].p50 - base) : '—']);
  section(
    `Start-up: ${f.n} fresh processes per path (first ${f.warmup} dropped), in turns`,
    `${machine()}\nload before the run: ${loadBefore}\n\n${table(['what', 'runs', 'p50 ms', 'p90 ms', 'min ms', 'added to the upstream alone, p50 ms'], rows)}\n\nThe first four: from the spawn of the command to the answer of one tools/call written at once (the upstream is bench/upstream.js; the gate opens its home, loads the manifest and the Cedar policy, records its start and spawns the upstream before it reads the call). The last three: from the spawn to the exit.`,
  );
}

if (isMain(import.meta.url)) await main();
