// Every benchmark, one after the other, each in its own process with its own defaults (so one
// script's warm state or heap does not colour the next). `npm run bench` runs this.
// Usage: node dist/bench/all.js [--quick] [--only overhead,throughput,...] [--verify-sizes 100000]
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { BENCH_DIST, loadNow, machine, section, table, TARGET_ORDER, tempDir, type TargetFigure } from './lib.js';

/** Each figure's script and the flags of a quick (smoke) run. */
export const SCRIPTS: { name: string; quick: string[] }[] = [
  { name: 'overhead', quick: ['--n', '200', '--warmup', '20', '--chunk', '50'] },
  { name: 'throughput', quick: ['--n', '200', '--warmup', '20'] },
  { name: 'peers', quick: ['--n', '100', '--warmup', '10', '--chunk', '50'] },
  { name: 'spaced', quick: ['--n', '5', '--gap', '50', '--warmup', '10'] },
  { name: 'breakdown', quick: ['--n', '100', '--warmup', '10', '--scale', '0.05'] },
  { name: 'frames', quick: ['--n', '100', '--commits', '50'] },
  { name: 'startup', quick: ['--n', '3'] },
  { name: 'verify', quick: ['--sizes', '1000', '--ref', '1000', '--seconds', '0.5'] },
  { name: 'anchor-bounds', quick: ['--certs', '2000', '--lines', '10000', '--runs', '1'] },
  { name: 'offload', quick: ['--n', '256'] },
  { name: 'fleet', quick: ['--n', '100', '--warmup', '10', '--gates', '1,2'] },
  { name: 'http', quick: ['--n', '60', '--warmup', '6'] },
  { name: 'token-key', quick: ['--n', '60', '--warmup', '6', '--micro', '100'] },
];

const { values } = parseArgs({ options: { quick: { type: 'boolean', default: false }, only: { type: 'string' }, 'verify-sizes': { type: 'string' } } });
const only = values.only ? new Set(values.only.split(',')) : null;
process.stdout.write(`# cloakpipe benchmarks\n\n${machine()}\n${values.quick ? '(quick run: tiny N, figures are not meaningful)\n' : ''}`);
let failed = 0;
const targetsFile = join(tempDir('cloakpipe-bench-targets-'), 'targets.jsonl');
const loadBefore = loadNow();
for (const s of SCRIPTS) {
  if (only && !only.has(s.name)) continue;
  // --verify-sizes: ledgers for verify other than its default (generating 1M entries takes minutes).
  const extra = s.name === 'verify' && values['verify-sizes'] ? ['--sizes', values['verify-sizes']] : [];
  const r = spawnSync(process.execPath, [join(BENCH_DIST, `${s.name}.js`), ...(values.quick ? s.quick : []), ...extra], { stdio: 'inherit', env: { ...process.env, BENCH_TARGETS: targetsFile } });
  if (r.status !== 0) {
    failed++;
    process.stdout.write(`\n${s.name}: FAILED (exit ${r.status})\n`);
  }
}

// The targets, each from this run, beside the load it was measured under.
const got: TargetFigure[] = existsSync(targetsFile)
  ? readFileSync(targetsFile, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l))
  : [];
const rows = TARGET_ORDER.map((name) => {
  const t = got.find((g) => g.target === name);
  return t ? [name, t.goal, t.measured, t.met ? 'met' : 'missed', t.load] : [name, '', 'not measured (script skipped or failed)', 'missed', ''];
});
section(
  'Targets (issue 16), this run',
  `${machine()}\nload average (1 min) at the start of the run: ${loadBefore.split(' ')[0]}; each row shows the load when its figure was taken. Wall-clock figures grow with load; CPU per call does much less.\n\n${table(['target', 'goal', 'measured', 'status', 'load'], rows)}`,
);
process.exit(failed ? 1 : 0);
