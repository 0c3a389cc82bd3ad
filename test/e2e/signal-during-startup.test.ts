// SIGTERM while the gate starts (product.md 7a), through the real binary: a signal that comes
// once the command runs (its modules loading, the home opening, the server starting) ends the
// gate as one that comes later does: exit 0, no server left running, and a start that was
// recorded has its shutdown recorded, the ledger verifying. A signal before node runs any of the
// gate's code can only end it 143, and then nothing may have been recorded or started.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { makeHome, writeFiles, helperScript, tempDir, cloakpipe, MODULE_LOG_PRELOAD, PERMIT_ALL } from '../helpers/cli.js';
import { RawPeer } from '../helpers/raw-gate.js';
import { gateArgs } from '../helpers/gate.js';
import { alive } from '../helpers/proc-figures.js';

let files: Record<string, string>;
before(() => {
  files = writeFiles({ 'm.yaml': 'version: 1\nrelease: start@1\ntools:\n  echo: { effect: read, arguments: {} }\n', 'p.cedar': PERMIT_ALL });
});

const ledger = (home: string): { kind: string; reason?: string }[] =>
  cloakpipe(['ledger', 'show', '--home', home, '--json']).stdout.trim().split('\n').filter(Boolean).map((l) => JSON.parse(l));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A gate whose every loaded module is listed in `modules`; its server writes its pid to `pidFile`. */
function startGate(home: string) {
  const dir = tempDir();
  const modules = join(dir, 'modules');
  const pidFile = join(dir, 'pid');
  const args = gateArgs({ home, manifest: files['m.yaml'], policy: files['p.cedar'], upstream: [process.execPath, helperScript('misbehaving-upstream.js')], node: MODULE_LOG_PRELOAD });
  const gate = new RawPeer([process.execPath, ...args], { CLOAKPIPE_TEST_MODULES: modules, PID_FILE: pidFile, KEEP_ALIVE: '1' });
  const loaded = (name: string) => existsSync(modules) && readFileSync(modules, 'utf8').includes(name);
  return { gate, pidFile, loaded };
}

/** What every stopped start must leave: no server, and a ledger whose recorded start has its end. */
async function checkEnd(home: string, g: ReturnType<typeof startGate>, code: number | string | null, what: string) {
  const killed = g.gate.child.signalCode === 'SIGTERM';
  if (existsSync(g.pidFile)) assert.equal(alive(Number(readFileSync(g.pidFile, 'utf8'))), false, `${what}: the server outlived the gate`);
  const entries = ledger(home);
  if (killed) {
    assert.equal(entries.length, 0, `${what}: killed by the signal after it recorded ${entries.map((e) => e.kind).join(',')}`);
    return;
  }
  assert.equal(code, 0, `${what}: exit ${code}; stderr: ${g.gate.stderr.slice(-500)}`);
  if (entries.length === 0) return;
  assert.deepEqual(entries.map((e) => e.kind), ['startup', 'shutdown'], what);
  assert.equal(entries[1].reason, 'SIGTERM', what);
  const v = cloakpipe(['verify', '--home', home]);
  assert.equal(v.status, 0, `${what}: verify: ${v.stdout}${v.stderr}`);
}

/** Bounded: a gate that does not leave fails the case rather than hanging it. */
const exitOf = (gate: RawPeer) => Promise.race([gate.exited, sleep(60_000).then(() => 'still running after 60 s')]);

// Modules the command loads once it runs (the gate's, then the policy engine's), and the home opening after them.
for (const [name, after] of [['cli/ledger-anchor.js', 0], ['cedar_wasm.js', 0], ['operations/operation-id.js', 0], ['operations/operation-id.js', 100], ['operations/operation-id.js', 300]] as const) {
  test(`SIGTERM ${after} ms after ${name} loads: exit 0, no server left, the ledger whole`, async () => {
    const home = makeHome();
    const g = startGate(home);
    const deadline = Date.now() + 60_000;
    while (!g.loaded(name) && Date.now() < deadline) await sleep(2);
    assert.ok(g.loaded(name), `${name} never loaded`);
    if (after > 0) await sleep(after);
    g.gate.child.kill('SIGTERM');
    const code = await exitOf(g.gate);
    assert.equal(g.gate.child.signalCode, null, 'killed by the signal mid-start');
    await checkEnd(home, g, code, name);
  });
}

test('SIGTERM at random instants of a start: each run ends whole', async () => {
  // How long a start takes here, to spread the signals over it.
  const home0 = makeHome();
  const first = startGate(home0);
  const t0 = Date.now();
  await first.gate.initialize();
  const startMs = Date.now() - t0;
  first.gate.child.kill('SIGTERM');
  await checkEnd(home0, first, await exitOf(first.gate), 'a started gate');
  for (let i = 0; i < 12; i++) {
    const home = makeHome();
    const g = startGate(home);
    const at = Math.floor(Math.random() * startMs * 1.2);
    await sleep(at);
    g.gate.child.kill('SIGTERM');
    await checkEnd(home, g, await exitOf(g.gate), `SIGTERM ${at} ms into a ${startMs} ms start`);
  }
});
