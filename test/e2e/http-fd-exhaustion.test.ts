// The HTTP door when it runs out of file descriptors (the kernel's EMFILE, Node's and libuv's
// handling of it, none ours): a flood of idle connections past the process's limit (lowered with
// util-linux's prlimit) must not end the gate nor make it spin; new sessions wait, and once the
// flood goes the door serves calls again, in the same process.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import net from 'node:net';
import { MEMORY, makeHome, writeFiles } from '../helpers/cli.js';
import { httpClient, startHttpGate } from '../helpers/http-gate.js';

const LIMIT = 48;
const FLOOD = 200;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** CPU time the process has used, in clock ticks (utime + stime, /proc/PID/stat). */
const cpuTicks = (pid: number) => {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return Number(fields[11]) + Number(fields[12]);
};

test('HTTP door: connections past its descriptor limit neither end the gate nor make it spin; it serves calls again once they close', { skip: process.platform !== 'linux' && 'Linux /proc and prlimit' }, async () => {
  const files = writeFiles({ 'm.yaml': 'version: 1\nrelease: fd@1\ntools:\n  read_graph: { effect: read, arguments: {} }\n', 'p.cedar': 'permit (principal, action, resource);\n' });
  const g = await startHttpGate({ home: makeHome(), manifest: files['m.yaml'], policy: files['p.cedar'], upstream: [process.execPath, MEMORY] });
  const pid = g.child.pid!;
  const flood: net.Socket[] = [];
  try {
    // A session before the flood: the door works.
    const before = await httpClient(g.url);
    await before.callTool({ name: 'read_graph', arguments: {} });
    await before.close();

    const prlimit = (...args: string[]) => {
      const p = spawnSync('prlimit', ['--pid', String(pid), ...args], { encoding: 'utf8' });
      assert.equal(p.status, 0, `prlimit: ${p.stderr}`);
      return p.stdout.trim();
    };
    const [soft, hard] = prlimit('--nofile', '--raw', '--noheadings', '--output=SOFT,HARD').split(/\s+/);
    prlimit(`--nofile=${LIMIT}:${hard}`);
    const u = new URL(g.url);
    for (let i = 0; i < FLOOD; i++) {
      const s = net.connect(Number(u.port), u.hostname);
      s.on('error', () => undefined);
      flood.push(s);
    }
    await sleep(1500);
    assert.ok(readdirSync(`/proc/${pid}/fd`).length >= LIMIT - 1, 'the flood reached the limit');
    const t0 = cpuTicks(pid);
    await sleep(2000);
    const used = cpuTicks(pid) - t0;
    assert.equal(g.child.exitCode, null, `the gate is still running: ${g.stderr()}`);
    // A process accepting and failing in a loop burns a whole core: ~200 ticks in 2 s.
    assert.ok(used < 100, `${used} clock ticks of CPU in 2 s while the flood held its descriptors`);

    for (const s of flood) s.destroy();
    flood.length = 0;
    // Back to its own limit: each session's upstream is a child that inherits it, and a Node
    // server does not start with 48 descriptors.
    prlimit(`--nofile=${soft}:${hard}`);
    await sleep(1000);
    const after = await httpClient(g.url);
    try {
      const r = await after.callTool({ name: 'read_graph', arguments: {} });
      assert.ok(Array.isArray((r as { content?: unknown }).content), 'a call through the door, in the same process');
    } finally {
      await after.close();
    }
    assert.equal(g.child.exitCode, null);
  } finally {
    for (const s of flood) s.destroy();
    await g.stop();
  }
});
