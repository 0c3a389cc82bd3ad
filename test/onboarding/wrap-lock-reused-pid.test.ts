// The home's wrap lock names the run that holds it. Judged by its pid alone, a lock a killed run
// left held the home for good once the pid was another process's (pids are reused): every wrap
// and unwrap said 'another wrap or unwrap is running' until the file was removed by hand. Now a
// lock names its process by pid and start time (/proc/PID/stat field 22), and one naming a live
// process that started after it is taken. Through the real binary; the unrelated process is real.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CLI } from '../helpers/cli.js';
import { world, type World } from './host-world.js';

const run = (w: World) => spawnSync(process.execPath, [CLI, 'wrap', '--trust-project', '--host', 'claude-code'], { cwd: w.project, env: w.env, encoding: 'utf8', timeout: 60_000 });

/** Field 22 of /proc/PID/stat: when the process started, in clock ticks after boot. */
const startOf = (pid: number) => readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /s, '').split(' ')[19];

test('a wrap lock naming a live process that is not its run (a reused pid) is taken; one naming its live run still holds the home', { skip: process.platform !== 'linux' && 'reads /proc' }, async (t) => {
  const w = world();
  const other = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 120000)'], { stdio: 'ignore' });
  t.after(() => other.kill('SIGKILL'));
  await new Promise((resolve) => other.once('spawn', resolve));
  const pid = other.pid!;
  const lock = join(w.gate, 'wrap.lock');

  // Left by a killed run whose pid is now this unrelated process's: another start time.
  writeFileSync(lock, `${pid} ${Number(startOf(pid)) - 1000}`);
  let r = run(w);
  assert.equal(r.status, 0, r.stderr);
  assert.ok(!r.stderr.includes('another wrap or unwrap is running'), r.stderr);
  assert.ok(!existsSync(lock), 'taken, then released');

  // As the run before this change wrote it (a pid alone), an hour before the process started.
  writeFileSync(lock, String(pid));
  const hourAgo = new Date(Date.now() - 3600_000);
  utimesSync(lock, hourAgo, hourAgo);
  r = run(w);
  assert.equal(r.status, 0, r.stderr);
  assert.ok(!existsSync(lock));

  // The run that holds it, alive: the home stays held, nothing is changed.
  writeFileSync(lock, `${pid} ${startOf(pid)}`);
  r = run(w);
  assert.equal(r.status, 1, r.stderr);
  assert.ok(r.stderr.includes(`another wrap or unwrap is running on this home (pid ${pid})`), r.stderr);
  assert.ok(existsSync(lock), 'left to its run');
});
