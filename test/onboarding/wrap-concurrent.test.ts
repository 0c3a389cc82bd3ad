// Two wrap runs at once on one home, each on a config with a server of the same name: each read
// the server's record when it started and wrote it back after drafting, so the later one dropped
// the other's entry, and unwrap could then not restore that config ("no record of how it was
// wrapped"). Now one run at a time holds the home; the other is told so and changes nothing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CLI, EVERYTHING } from '../helpers/cli.js';
import { put, trusted, type World, world } from './host-world.js';

function run(w: World, args: string[]): Promise<{ status: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const c = spawn(process.execPath, [CLI, ...trusted(args)], { cwd: w.project, env: w.env });
    let stderr = '';
    c.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => c.kill('SIGKILL'), 120_000);
    c.on('close', (status) => (clearTimeout(timer), resolve({ status, stderr })));
  });
}

test('two wrap runs at once on configs with a server of one name: each config is wrapped by one run or left as is, and unwrap restores both byte for byte', async () => {
  const w = world();
  const server = `{\n  "mcpServers": {\n    "ev": { "command": ${JSON.stringify(process.execPath)}, "args": [${JSON.stringify(EVERYTHING)}, "stdio"] }\n  }\n}\n`;
  const configs = [put(join(w.project, '.mcp.json'), server), put(join(w.home, '.cursor', 'mcp.json'), server)];
  const before = configs.map((p) => readFileSync(p));
  const runs = await Promise.all([run(w, ['wrap', '--host', 'claude-code', '--timeout', '60s']), run(w, ['wrap', '--host', 'cursor', '--timeout', '60s'])]);
  for (const r of runs) assert.ok(r.status === 0 || (r.status === 1 && /another wrap or unwrap is running on this home \(pid \d+\)/.test(r.stderr)), r.stderr);
  // The one told to wait, run again alone.
  for (const [i, r] of runs.entries()) if (r.status === 1) assert.equal((await run(w, ['wrap', '--host', i === 0 ? 'claude-code' : 'cursor'])).status, 0);
  for (const p of configs) assert.ok(readFileSync(p, 'utf8').includes('mcp-proxy'), `${p} wrapped`);
  const back = await run(w, ['unwrap', '--host', 'claude-code', '--host', 'cursor']);
  assert.equal(back.status, 0, back.stderr);
  configs.forEach((p, i) => assert.deepEqual(readFileSync(p), before[i], `${p} restored`));
});
