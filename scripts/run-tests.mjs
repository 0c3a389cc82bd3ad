// Runs every compiled test file with Node's built-in runner and closes with the plain
// `N passed, N failed` line. A run that executes no test fails: green must mean tested.
import { spawn } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

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
const child = spawn(
  process.execPath,
  ['--test', `--test-concurrency=${concurrency}`, '--test-timeout=900000', '--test-reporter=spec', ...files],
  { stdio: ['ignore', 'pipe', 'inherit'] },
);
let tail = '';
child.stdout.on('data', (d) => {
  process.stdout.write(d);
  tail = (tail + d.toString()).slice(-4000);
});
child.on('close', (code) => {
  const num = (name) => Number((new RegExp(`ℹ ${name} (\\d+)`).exec(tail) ?? [])[1] ?? 0);
  const passed = num('pass');
  const failed = num('fail') + num('cancelled');
  const skipped = num('skipped') + num('todo');
  console.log(`${passed} passed, ${failed} failed, ${skipped} skipped`);
  if (passed + failed === 0) {
    console.error('no test was executed');
    process.exit(1);
  }
  process.exit(code === 0 && failed === 0 ? 0 : 1);
});
