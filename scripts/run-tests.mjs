// Runs every compiled test file with Node's built-in runner and closes with the plain
// `N passed, N failed` line. A run that executes no test fails: green must mean tested.
import { spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const roots = process.argv.slice(2).length ? process.argv.slice(2) : ['dist/test'];
const files = [];
const walk = (p) => {
  if (statSync(p).isDirectory()) for (const e of readdirSync(p).sort()) walk(join(p, e));
  else if (p.endsWith('.test.js')) files.push(p);
};
for (const r of roots) walk(r);
if (files.length === 0) {
  console.error('no test files found under ' + roots.join(', '));
  process.exit(1);
}
const concurrency = process.env.TEST_CONCURRENCY ?? '3';
// The tests' temporary homes, stores and keys go under one directory of this run (TMPDIR for
// every test process), removed when the run ends: a whole run used to leave thousands in /tmp.
const runTmp = mkdtempSync(join(tmpdir(), 'cloakpipe-test-run-'));
// Others may pass through it, not list it: the PostgreSQL suites run their clusters as the
// `postgres` user in directories of their own under it (each mkdtemp'd 0700, then handed over).
chmodSync(runTmp, 0o711);
// Besides the spec reporter on stdout, each file's time goes to a file read at the end.
const timesFile = join(runTmp, 'times.json');
const child = spawn(
  process.execPath,
  [
    '--test',
    `--test-concurrency=${concurrency}`,
    '--test-timeout=900000',
    '--test-reporter=spec',
    '--test-reporter-destination=stdout',
    `--test-reporter=${fileURLToPath(new URL('./file-times.mjs', import.meta.url))}`,
    `--test-reporter-destination=${timesFile}`,
    ...files,
  ],
  { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, TMPDIR: runTmp } },
);

/** The slowest files of the run, so the suite's time stays in view (never fails the run). */
function slowestFiles(n = 10) {
  try {
    const times = Object.entries(JSON.parse(readFileSync(timesFile, 'utf8'))).sort((a, b) => b[1] - a[1]);
    const total = times.reduce((s, [, ms]) => s + ms, 0);
    console.log(`\nslowest test files (of ${times.length}, ${(total / 1000).toFixed(0)} s of tests in all, ${concurrency} at a time):`);
    for (const [file, ms] of times.slice(0, n)) console.log(`${(ms / 1000).toFixed(1).padStart(7)} s  ${relative(process.cwd(), file)}`);
  } catch {
    console.log('(no file times were written)');
  }
}
// The summary lines (`ℹ pass N`) are read as they stream: the spec reporter prints the failing
// tests after them, todo ones included, which can be longer than any fixed tail.
const summary = {};
let partial = '';
const scan = (text) => {
  for (const line of text.split('\n')) {
    const m = /^ℹ (\w+) (\d+)$/.exec(line.trim());
    if (m) summary[m[1]] = Number(m[2]);
  }
};
child.stdout.setEncoding('utf8'); // a chunk may end inside a multi-byte character
child.stdout.on('data', (d) => {
  process.stdout.write(d);
  const lines = (partial + d).split('\n');
  partial = lines.pop();
  scan(lines.join('\n'));
});
child.on('close', (code) => {
  scan(partial);
  const num = (name) => summary[name] ?? 0;
  const passed = num('pass');
  const failed = num('fail') + num('cancelled');
  const skipped = num('skipped') + num('todo');
  slowestFiles();
  rmSync(runTmp, { recursive: true, force: true });
  console.log(`${passed} passed, ${failed} failed, ${skipped} skipped`);
  if (passed + failed === 0) {
    console.error('no test was executed');
    process.exit(1);
  }
  process.exit(code === 0 && failed === 0 ? 0 : 1);
});
