// The session's end (product.md 7a, issue 12 item 8), through the real binary: SIGTERM or
// SIGINT stops reading the host, lets calls in flight finish, stops the upstream (SIGTERM, then
// SIGKILL 2 s later), records the shutdown and exits 0; the upstream never outlives the gate,
// also when the host is the SDK client closing (stdin end, SIGTERM at 2 s, SIGKILL at 4 s).
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { makeHome, writeFiles, helperScript, tempDir, cloakpipe, PERMIT_ALL } from '../helpers/cli.js';
import { RawGate } from '../helpers/raw-gate.js';
import { startGate } from '../helpers/gate.js';
import { alive } from '../helpers/proc-figures.js';

let files: Record<string, string>;
before(() => {
  files = writeFiles({ 'm.yaml': 'version: 1\nrelease: end@1\ntools:\n  echo: { effect: read, arguments: {} }\n  slow: { effect: read, arguments: {} }\n', 'p.cedar': PERMIT_ALL });
});

const ledger = (home: string) => cloakpipe(['ledger', 'show', '--home', home, '--json']).stdout.trim().split('\n').map((l) => JSON.parse(l));

for (const [name, env] of [
  ['leaves when its stdin ends', {}],
  ['stays after its stdin ends', { KEEP_ALIVE: '1' }],
  ['ignores stdin end and SIGTERM', { KEEP_ALIVE: '1', IGNORE_SIGTERM: '1' }],
] as const) {
  test(`the SDK client's close(): no orphan, a shutdown entry (an upstream that ${name})`, async () => {
    const home = makeHome();
    const pidFile = join(tempDir(), 'pid');
    const c = await startGate({ home, manifest: files['m.yaml'], policy: files['p.cedar'], upstream: [process.execPath, helperScript('misbehaving-upstream.js')], env: { PID_FILE: pidFile, ...env } });
    await c.client.callTool({ name: 'echo', arguments: {} });
    const upstreamPid = Number(readFileSync(pidFile, 'utf8'));
    await c.close(); // returns once the gate has exited (or after the SDK's SIGKILL)
    assert.equal(alive(upstreamPid), false, 'the upstream is gone with the gate');
    const last = ledger(home).at(-1);
    assert.equal(last.kind, 'shutdown', 'the gate recorded its end before it left');
  });
}

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  test(`${signal}: the call in flight is answered, the upstream stopped, the shutdown recorded, exit 0`, async () => {
    const home = makeHome();
    const pidFile = join(tempDir(), 'pid');
    const gate = new RawGate({ home, manifest: files['m.yaml'], policy: files['p.cedar'], upstream: [process.execPath, helperScript('misbehaving-upstream.js')], env: { PID_FILE: pidFile, KEEP_ALIVE: '1' } });
    await gate.initialize();
    gate.send('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow","arguments":{}}}\n');
    while (ledger(home).filter((e) => e.kind === 'decision').length === 0) await new Promise((r) => setTimeout(r, 20));
    gate.child.kill(signal);
    const r = await gate.next();
    assert.equal(r.id, 1);
    assert.equal(r.result?.content?.[0]?.text, 'slow', 'the call in flight finished');
    assert.equal(await gate.exited, 0);
    assert.equal(alive(Number(readFileSync(pidFile, 'utf8'))), false, 'no orphan');
    const entries = ledger(home);
    assert.deepEqual(entries.slice(-2).map((e) => e.kind), ['result', 'shutdown']);
    assert.equal(entries.at(-1).reason, signal);
  });
}

test('SIGTERM with a write call that never ends: past the 5 s grace it is outcome unknown, recorded before the shutdown, exit 0', async () => {
  const home = makeHome();
  const pidFile = join(tempDir(), 'pid');
  const m = writeFiles({ 'm.yaml': 'version: 1\nrelease: end@1\ntools:\n  hang: { effect: write, arguments: {} }\n' })['m.yaml'];
  const gate = new RawGate({ home, manifest: m, policy: files['p.cedar'], upstream: [process.execPath, helperScript('misbehaving-upstream.js')], env: { PID_FILE: pidFile } });
  await gate.initialize();
  gate.send('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"hang","arguments":{}}}\n');
  while (ledger(home).filter((e) => e.kind === 'decision').length === 0) await new Promise((r) => setTimeout(r, 20));
  gate.child.kill('SIGTERM');
  const r = await gate.next(15_000);
  assert.equal(r.id, 1);
  assert.equal(r.error?.code, -32003, JSON.stringify(r));
  assert.match(r.error?.message, /outcome unknown/);
  assert.equal(await gate.exited, 0);
  assert.equal(alive(Number(readFileSync(pidFile, 'utf8'))), false, 'no orphan');
  const entries = ledger(home);
  assert.deepEqual(entries.slice(-2).map((e) => e.kind), ['result', 'shutdown']);
  assert.equal(entries.at(-2).outcome, 'unknown');
  const ops = JSON.parse(cloakpipe(['ops', 'list', '--json', '--home', home]).stdout);
  assert.equal(ops.state, 'unknown', 'the operation is unknown: a retry must be reconciled first');
});

/** Watchdogs (doors/upstream/orphan-watch.ts) still running for the upstream `pid`. */
function watchdogsOf(pid: number): number[] {
  const found: number[] = [];
  for (const p of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    let cmd: string[];
    try {
      cmd = readFileSync(`/proc/${p}/cmdline`, 'utf8').split('\0');
    } catch {
      continue; // gone meanwhile
    }
    if (cmd.includes('cloakpipe-orphan-watch') && cmd.includes(String(pid))) found.push(Number(p));
  }
  return found;
}

for (const [name, env] of [
  ['stays after its stdin ends', { KEEP_ALIVE: '1' }],
  ['ignores stdin end and SIGTERM', { KEEP_ALIVE: '1', IGNORE_SIGTERM: '1' }],
] as const) {
  test(`the gate SIGKILLed (it runs no code): an upstream that ${name} is stopped all the same`, { skip: process.platform === 'win32' }, async () => {
    const home = makeHome();
    const pidFile = join(tempDir(), 'pid');
    const gate = new RawGate({ home, manifest: files['m.yaml'], policy: files['p.cedar'], upstream: [process.execPath, helperScript('misbehaving-upstream.js')], env: { PID_FILE: pidFile, ...env } });
    await gate.initialize();
    const upstreamPid = Number(readFileSync(pidFile, 'utf8'));
    assert.equal(watchdogsOf(upstreamPid).length, 1, 'one watchdog beside the upstream');
    try {
      // Not `exited` (the pipes' close): an orphan would hold the gate's stderr open.
      gate.child.kill('SIGKILL');
      const until = Date.now() + 10_000; // SIGTERM at once, SIGKILL 2 s later
      while (alive(gate.child.pid!) && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
      while (alive(upstreamPid) && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
      assert.equal(alive(upstreamPid), false, 'the upstream did not outlive the gate');
      while (watchdogsOf(upstreamPid).length > 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
      assert.deepEqual(watchdogsOf(upstreamPid), [], 'and its watchdog left');
    } finally {
      if (alive(upstreamPid)) process.kill(upstreamPid, 'SIGKILL'); // a failed run leaves no orphan either
    }
  });
}

test('a gate that stops normally leaves no watchdog behind', { skip: process.platform === 'win32' }, async () => {
  const home = makeHome();
  const pidFile = join(tempDir(), 'pid');
  const gate = new RawGate({ home, manifest: files['m.yaml'], policy: files['p.cedar'], upstream: [process.execPath, helperScript('misbehaving-upstream.js')], env: { PID_FILE: pidFile, KEEP_ALIVE: '1' } });
  await gate.initialize();
  const upstreamPid = Number(readFileSync(pidFile, 'utf8'));
  gate.child.kill('SIGTERM');
  assert.equal(await gate.exited, 0);
  assert.equal(alive(upstreamPid), false);
  const until = Date.now() + 5_000;
  while (watchdogsOf(upstreamPid).length > 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
  assert.deepEqual(watchdogsOf(upstreamPid), [], 'told "done", the watchdog left');
});

test('SIGTERM before the host sent initialize: an upstream that ignores SIGTERM is stopped, startup and shutdown recorded, exit 0', { skip: process.platform === 'win32' }, async () => {
  const home = makeHome();
  const pidFile = join(tempDir(), 'pid');
  const gate = new RawGate({ home, manifest: files['m.yaml'], policy: files['p.cedar'], upstream: [process.execPath, helperScript('misbehaving-upstream.js')], env: { PID_FILE: pidFile, KEEP_ALIVE: '1', IGNORE_SIGTERM: '1' } });
  const until = Date.now() + 120_000; // a cold start under load
  while (!existsSync(pidFile) && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
  const upstreamPid = Number(readFileSync(pidFile, 'utf8'));
  gate.child.kill('SIGTERM');
  assert.equal(await gate.exited, 0);
  assert.equal(alive(upstreamPid), false, 'no orphan');
  const gone = Date.now() + 5_000;
  while (watchdogsOf(upstreamPid).length > 0 && Date.now() < gone) await new Promise((r) => setTimeout(r, 50));
  assert.deepEqual(watchdogsOf(upstreamPid), [], 'no watchdog left');
  assert.deepEqual(ledger(home).map((e) => [e.kind, e.reason ?? null]), [['startup', null], ['shutdown', 'SIGTERM']]);
});
