// Two wrap runs that find the same stale lock (its run was killed) must not both take it: each
// used to remove the file it had judged stale and create its own, and the slower one's removal
// could remove the faster one's new lock, so both ran at once on one home (what the lock is for).
// Real binary, two runs released together at the lock (lock-barrier.ts), many times: exactly one
// drafts and wraps, the other says the home is busy and changes nothing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { CLI, MEMORY, ROOT, tempDir } from '../helpers/cli.js';
import { put, world } from './host-world.js';

const BARRIER = pathToFileURL(join(ROOT, 'dist/test/onboarding/lock-barrier.js')).href;

function wrapRun(cwd: string, env: NodeJS.ProcessEnv, config: string): Promise<{ status: number | null; stderr: string }> {
  const child = spawn(process.execPath, ['--import', BARRIER, CLI, 'wrap', '--host', config], { cwd, env, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const bound = setTimeout(() => child.kill('SIGKILL'), 60_000);
  return new Promise((resolve) => child.once('close', (status) => (clearTimeout(bound), resolve({ status, stderr }))));
}

/** Until two runs wait at the barrier (each leaves BARRIER.PID); bounded. */
async function bothWaiting(barrier: string): Promise<void> {
  const dir = dirname(barrier);
  for (const until = Date.now() + 60_000; Date.now() < until; await new Promise((r) => setTimeout(r, 20)))
    if (readdirSync(dir).filter((f) => f.startsWith(`${basename(barrier)}.`)).length === 2) return;
  throw new Error('the runs never reached the lock');
}

/** A pid no process has now: a short-lived child's, once it has exited. */
async function deadPid(): Promise<number> {
  const c = spawn(process.execPath, ['-e', '0'], { stdio: 'ignore' });
  await new Promise((resolve) => c.once('exit', resolve));
  return c.pid!;
}

test('two runs that find one stale wrap lock: one takes it, the other is refused, every time', { skip: process.platform !== 'linux' && 'reads /proc', timeout: 600_000 }, async () => {
  const w = world();
  const text = JSON.stringify({ mcpServers: { memory: { command: process.execPath, args: [MEMORY] } } }, null, 2) + '\n';
  const config = put(join(w.home, 'mcp.json'), text);
  const lock = join(w.gate, 'wrap.lock');
  const release = join(tempDir('cloakpipe-barrier-'), 'release');
  const env = { ...w.env, CLOAKPIPE_TEST_BARRIER: release };
  for (let i = 0; i < 15; i++) {
    writeFileSync(config, text);
    rmSync(join(w.gate, 'servers'), { recursive: true, force: true });
    for (const f of readdirSync(dirname(release))) rmSync(join(dirname(release), f));
    writeFileSync(lock, `${await deadPid()} 1`); // a killed run's
    const runs = [wrapRun(w.project, env, config), wrapRun(w.project, env, config)];
    await bothWaiting(release);
    writeFileSync(release, '');
    const [a, b] = await Promise.all(runs);
    const wrapped = [a, b].filter((r) => r.status === 0);
    const busy = [a, b].filter((r) => r.status === 1 && r.stderr.includes('another wrap or unwrap is running on this home'));
    assert.equal(wrapped.length, 1, `round ${i}: both ran on the home at once\n${a.stderr}\n${b.stderr}`);
    assert.equal(busy.length, 1, `round ${i}:\n${a.stderr}\n${b.stderr}`);
    assert.ok(readFileSync(config, 'utf8').includes('mcp-proxy'), 'wrapped once');
    assert.ok(!existsSync(lock) && !existsSync(`${lock}.takeover`), 'released by its run');
  }
});
