// The evidence suite (confinement.md): the adversarial agent in a locally built image against
// observers outside the container. Skips, saying so, when no Docker engine is reachable.
// Cases run sequentially. One evidence JSON file per run: counts and hashes, never a canary.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync, mkdirSync, rmSync } from 'node:fs';
import { tmpdir, release } from 'node:os';
import { join, resolve } from 'node:path';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { Engine, engineReachable } from '../../src/confine/engine.js';
import { admissionViolations } from '../../src/confine/admission.js';
import { hardenedProfile } from '../../src/confine/profile.js';
import type { Summary } from '../../src/confine/bridge.js';
import { sendControl } from '../../src/confine/control.js';
import { TcpObserver, UdpObserver, bridgeAddress, observeContainer, observeRecord, sha, type Observation } from './fixtures/observers.js';
import { CLI, cloakpipeAsync } from '../helpers/cli.js';
import { testSession, gateFiles, SESSION_CHILD, APPROVAL_MANIFEST, confineUpstream, type TestSessionConfig } from './fixtures/session.js';
import { readRecord } from '../helpers/gate.js';

process.env.CONFINE_GATE_DIR_ID = `${process.pid}`; // child-process bridges share this run's gate home
const ROOT = resolve(fileURLToPath(new URL('.', import.meta.url)), '../../..');
const engine = new Engine();
const reachable = await engineReachable();
const skip = reachable ? false : `no Docker engine reachable at ${engine.socketPath}: Docker tests skipped`;
// In CI (CI=true) the Docker suite must run: an engine that is not there fails, never skips.
if (skip && process.env.CI === 'true') throw new Error(`confine: ${skip} (CI=true: failing, not skipping)`);
if (skip) process.stderr.write(`\n#### WARNING: confine: ${skip} ####\n\n`);

let IMAGE = '';
let VOLUME_IMAGE = '';
const work = mkdtempSync(join(tmpdir(), 'cp-confine-'));
const tcp: Record<string, TcpObserver> = {};
const udp: UdpObserver[] = [];
const evidence: { format: string; version: number; kernel: string; docker: string | null; api: string | null; image: string; bridge_observer?: boolean; sinks: { permitted: string[]; denied: string[] }; cases: unknown[] } = {
  format: 'cloakpipe-confine-evidence',
  version: 1,
  // Which upstream tools the cases' `record` counts speak of: the permitted sink, and the sink
  // whose ceiling is below the session label (read by `cloakpipe scope report`).
  sinks: { permitted: ['send_update'], denied: ['post_public'] },
  kernel: release(),
  docker: null,
  api: null,
  image: '',
  cases: [],
};
const canaries: string[] = [];

before(async () => {
  if (skip) return;
  const v = await engine.version();
  evidence.docker = v.Version;
  evidence.api = v.ApiVersion;
  IMAGE = process.env.CONFINE_IMAGE ?? execFileSync(process.execPath, [join(ROOT, 'confine/image/build.mjs')], { encoding: 'utf8' }).trim();
  VOLUME_IMAGE = execFileSync(process.execPath, [join(ROOT, 'confine/image/build.mjs'), '--variant', 'volume'], { encoding: 'utf8' }).trim();
  evidence.image = IMAGE;
  tcp.v4 = await new TcpObserver('127.0.0.1').listen();
  tcp.v6 = await new TcpObserver('::1').listen();
  const br = await bridgeAddress(engine);
  evidence.bridge_observer = br !== null;
  if (br) tcp.bridge = await new TcpObserver(br).listen();
  udp.push(await new UdpObserver('127.0.0.1').listen());
  udp.push(await new UdpObserver('::1').listen());
  if (br) udp.push(await new UdpObserver(br).listen());
});

after(() => {
  for (const o of Object.values(tcp)) o.close();
  for (const o of udp) o.close();
  if (skip) return;
  const dir = process.env.CONFINE_EVIDENCE_DIR ?? join(ROOT, 'dist', 'evidence');
  mkdirSync(dir, { recursive: true });
  const text = JSON.stringify(evidence, null, 1);
  for (const c of canaries) assert.ok(!text.includes(c), 'a canary reached the evidence file');
  writeFileSync(join(dir, `confine-${new Date().toISOString().replace(/[:.]/g, '-')}.json`), text + '\n');
  rmSync(work, { recursive: true, force: true });
});

function newCanary(): string {
  const c = `CANARY${randomBytes(12).toString('hex')}`;
  canaries.push(c);
  return c;
}

function targets() {
  const t: Record<string, unknown> = { v4: ['127.0.0.1', tcp.v4.port], v6: ['::1', tcp.v6.port], dns: udp.map((u) => [u.host, u.port]) };
  if (tcp.bridge) t.bridge = [tcp.bridge.host, tcp.bridge.port];
  return t;
}

interface Observed {
  summary: Summary;
  record: Record<string, number> & { calls: number };
  tcp: Record<string, Observation>;
  dns: Observation;
  export: Observation;
  logs: Observation & { readable?: boolean };
  state: unknown;
  gone: boolean;
}

/** Run one session in-process with every observer; record evidence; return observations. */
async function observed(name: string, mode: string, cfg: Partial<TestSessionConfig> = {}, internal: Parameters<typeof testSession>[1] = {}, canary = newCanary()): Promise<Observed & { canary: string }> {
  for (const o of Object.values(tcp)) o.reset();
  for (const o of udp) o.reset();
  const recordFile = join(work, `${name.replace(/\W+/g, '_')}-${Date.now()}.jsonl`);
  let container: Awaited<ReturnType<typeof observeContainer>> | null = null;
  let id = '';
  const summary = await testSession(
    { imageId: IMAGE, recordFile, input: { canary, mode, targets: targets() } as any, ...cfg },
    {
      ...internal,
      beforeRemove: async (cid) => {
        id = cid;
        container = await observeContainer(engine, cid, canary);
      },
    },
  );
  await new Promise((r) => setTimeout(r, 300)); // late datagrams
  const dnsObs = udp.map((u) => u.observe(canary));
  const o: Observed = {
    summary,
    record: observeRecord(recordFile, canary),
    tcp: Object.fromEntries(Object.entries(tcp).map(([k, v]) => [k, v.observe(canary)])),
    dns: { count: dnsObs.reduce((a, b) => a + b.count, 0), digests: dnsObs.flatMap((d) => d.digests) },
    export: container ? (container as any).export : { count: 0, digests: [] },
    logs: container ? (container as any).logs : { count: 0, digests: [] },
    state: container ? (container as any).state : null,
    gone: summary.container ? (await engine.inspectOrNull(summary.container)) === null : true,
  };
  assert.ok(!JSON.stringify(summary).includes(canary), 'no agent bytes in the summary');
  evidence.cases.push({ name, mode, canary_digest: sha(canary), ...o, container: id || summary.container });
  return { ...o, canary };
}

/** The oracle of the baseline: the permitted tool receives the canary once, nothing else sees it. */
function oracle(o: Observed): string[] {
  const f: string[] = [];
  if ((o.record.send_update ?? 0) !== 1) f.push('permitted tool did not receive the canary exactly once');
  if ((o.record.post_public ?? 0) !== 0) f.push('upstream record: low-ceiling tool received the canary');
  for (const [k, v] of Object.entries(o.tcp)) if (v.count) f.push(`tcp ${k}`);
  if (o.dns.count) f.push('dns');
  if (o.export.count) f.push('export path');
  if (o.logs.count) f.push('logs');
  if (!o.gone) f.push('container still exists');
  return f;
}

function noDelivery(o: Observed) {
  assert.equal(o.record.calls, 0, 'nothing delivered to the upstream');
  assert.equal(o.gone, true, 'container gone');
  for (const v of Object.values(o.tcp)) assert.equal(v.count, 0);
  assert.equal(o.dns.count, 0);
}

const opts = { skip, concurrency: false };

// ---------------------------------------------------------------------------------------------
test('image: the locally built agent image passes admission; an image VOLUME is refused', opts, async () => {
  for (const [img, expected] of [
    [IMAGE, []],
    [VOLUME_IMAGE, ['volumes', 'mounts']],
  ] as const) {
    const id = await engine.create(hardenedProfile(img));
    try {
      assert.deepEqual(admissionViolations(await engine.inspect(id), img).sort(), [...expected].sort());
    } finally {
      await engine.remove(id);
    }
  }
  const canary = newCanary();
  const s = await testSession({ imageId: VOLUME_IMAGE, recordFile: join(work, 'vol.jsonl'), input: { canary, mode: 'baseline', targets: targets() } as any });
  assert.equal(s.ended, 'refused');
  assert.deepEqual(s.violations.sort(), ['mounts', 'volumes']);
  assert.equal(await engine.inspectOrNull(s.container!), null);
});

for (const run of [1, 2]) {
  test(`baseline run ${run}: the permitted tool receives the canary once, every observer sees nothing, the container is gone`, opts, async () => {
    const o = await observed(`baseline-${run}`, 'baseline');
    assert.deepEqual(oracle(o), []);
    assert.equal(o.summary.allowed, 1);
    assert.equal(o.summary.denied, 1);
    assert.equal(o.summary.ended, 'stopped');
    assert.equal(o.summary.reason, 'frame_keys');
    assert.ok(o.summary.stderr_bytes > 0);
    assert.equal(o.logs.readable, false, 'log driver none: nothing to read');
    assert.equal(o.summary.removed, true);
  });
}

test('a polite agent finishes normally (exit 0)', opts, async () => {
  const o = await observed('polite', 'polite');
  assert.equal(o.summary.ended, 'finished');
  assert.equal(o.record.send_update, 1);
  assert.equal(o.gone, true);
});

// ---------------------------------------------------------------------------------------------
// Mutations: each protection removed on its own.
const mutations: Array<{ name: string; weaken: (b: any) => void; violation: string; observer: (o: Observed) => number }> = [
  {
    name: 'network',
    weaken: (b) => {
      b.HostConfig.NetworkMode = 'bridge';
      b.NetworkDisabled = false;
    },
    violation: 'network_mode',
    observer: (o) => (o.tcp.bridge?.count ?? 0) + o.dns.count,
  },
  { name: 'read-only root', weaken: (b) => (b.HostConfig.ReadonlyRootfs = false), violation: 'readonly_rootfs', observer: (o) => o.export.count },
  { name: 'log driver', weaken: (b) => (b.HostConfig.LogConfig = { Type: 'json-file', Config: {} }), violation: 'log_driver', observer: (o) => o.logs.count },
];

for (const m of mutations) {
  test(`mutation ${m.name}: admission refuses; bypassed, the canary shows at its observer and the oracle fails`, opts, async () => {
    const refused = await observed(`mutation-${m.name}-admission`, 'baseline', {}, { weaken: m.weaken });
    assert.equal(refused.summary.ended, 'refused');
    assert.ok(refused.summary.violations.includes(m.violation), `violations: ${refused.summary.violations}`);
    assert.equal(refused.record.calls, 0);
    assert.equal(refused.gone, true);

    const o = await observed(`mutation-${m.name}-bypassed`, 'baseline', {}, { weaken: m.weaken, skipAdmission: true });
    assert.ok(m.observer(o) > 0, 'the canary reached the protection’s observer');
    assert.notDeepEqual(oracle(o), [], 'the oracle fails');
    assert.equal(o.record.send_update, 1, 'the permitted tool still works');
    if (m.name === 'network') assert.ok((o.tcp.bridge?.count ?? 0) >= 2, 'agent and child process both reached the bridge address');
  });
}

test('admission judges what runs, not how it is spelled: a seccomp profile allowing every call, a supplementary root group, unmasked /proc paths are refused', opts, async () => {
  const weakenings: Array<[(b: any) => void, string]> = [
    [(b) => b.HostConfig.SecurityOpt.push(`seccomp=${JSON.stringify({ defaultAction: 'SCMP_ACT_ALLOW' })}`), 'security_opt'],
    [(b) => (b.HostConfig.GroupAdd = ['0']), 'group_add'],
    [(b) => Object.assign(b.HostConfig, { MaskedPaths: [], ReadonlyPaths: [] }), 'masked_paths'],
  ];
  for (const [weaken, violation] of weakenings) {
    const o = await observed(`admission-${violation}`, 'baseline', {}, { weaken });
    assert.deepEqual([o.summary.ended, o.summary.violations], ['refused', [violation]]);
    noDelivery(o);
  }
});

test('mutation low sink ceiling: an unclassified payload is refused; bypassed, the low-ceiling tool receives the canary', opts, async () => {
  const refused = await observed('mutation-ceiling-admission', 'baseline', { sensitivity: null });
  assert.equal(refused.summary.ended, 'refused');
  assert.equal(refused.summary.reason, 'input_unclassified');
  assert.equal(refused.summary.container, null, 'refused before any container exists');
  const o = await observed('mutation-ceiling-bypassed', 'baseline', { sensitivity: null }, { skipFlowAdmission: true });
  assert.equal(o.record.post_public, 1);
  assert.ok(oracle(o).includes('upstream record: low-ceiling tool received the canary'));
  assert.equal(o.record.send_update, 1);
});

// ---------------------------------------------------------------------------------------------
// Child-process bridges (killed/paused bridge and watchdog, watchdog mutations).

interface ChildRun {
  child: ChildProcess;
  created: Promise<{ containerId: string }>;
  running: Promise<{ containerId: string; watchdogPid: number | null }>;
  done: Promise<{ code: number | null; summary: Summary | null }>;
  recordFile: string;
}

function childSession(name: string, mode: string, internal: Record<string, unknown> = {}, extra: Partial<TestSessionConfig> = {}): ChildRun {
  const canary = newCanary();
  const recordFile = join(work, `${name}-${Date.now()}.jsonl`);
  const cfg: TestSessionConfig = { imageId: IMAGE, recordFile, input: { canary, mode, targets: targets() } as any, internal, ...extra };
  const child = spawn(process.execPath, [SESSION_CHILD, JSON.stringify(cfg)], { stdio: ['ignore', 'pipe', 'ignore'] });
  let buf = '';
  let summary: Summary | null = null;
  let onCreated: (v: any) => void;
  let createdLost: (e: Error) => void;
  const created = new Promise<any>((r, j) => ((onCreated = r), (createdLost = j)));
  let onRunning: (v: any) => void;
  let runningLost: (e: Error) => void;
  const running = new Promise<any>((r, j) => ((onRunning = r), (runningLost = j)));
  // Unawaited by some cases: a rejection nobody waits for must not end the file.
  created.catch(() => {});
  running.catch(() => {});
  child.stdout!.on('data', (d) => {
    buf += d;
    let nl;
    while ((nl = buf.indexOf('\n')) !== -1) {
      const ev = JSON.parse(buf.slice(0, nl));
      buf = buf.slice(nl + 1);
      if (ev.event === 'created') onCreated(ev);
      if (ev.event === 'running') onRunning(ev);
      if (ev.event === 'summary') summary = ev.summary;
    }
  });
  const done = new Promise<{ code: number | null; summary: Summary | null }>((r) =>
    child.on('exit', (code, sig) => {
      // A session child that crashed never says 'created' or 'running': fail the case, don't wait for ever.
      const lost = new Error(`session child '${name}' exited (${code ?? sig}) before the event awaited`);
      createdLost(lost);
      runningLost(lost);
      r({ code, summary });
    }),
  );
  return { child, created, running, done, recordFile };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The recording upstream's command line (its environment: `confineUpstream(record).env`). */
const RECORDER = confineUpstream('/dev/null');

/** A file that makes the upstream describe send_update as `description` (a changed definition). */
function descriptionsFile(description: string): string {
  const f = join(work, `descriptions-${Date.now()}.json`);
  writeFileSync(f, JSON.stringify({ send_update: description }));
  return f;
}

async function goneWithin(id: string, ms: number): Promise<boolean> {
  const t0 = Date.now();
  while (Date.now() - t0 < ms) {
    if ((await engine.inspectOrNull(id)) === null) return true;
    await sleep(200);
  }
  return false;
}

async function waitForRecord(file: string, ms = 20_000): Promise<void> {
  const t0 = Date.now();
  while (Date.now() - t0 < ms) {
    if (readRecord(`${file}.done`).length > 0) return;
    await sleep(100);
  }
  assert.fail('the permitted tool was not reached');
}

async function running(id: string): Promise<boolean> {
  return (await engine.inspectOrNull(id))?.State?.Running === true;
}

function signal(pid: number | null | undefined, sig: NodeJS.Signals) {
  if (!pid) return;
  try {
    process.kill(pid, sig);
  } catch {
    /* already gone */
  }
}

test('failure: killed bridge → the watchdog removes the container', opts, async () => {
  const r = childSession('killed-bridge', 'hold');
  const info = await r.running;
  await sleep(500);
  r.child.kill('SIGKILL');
  assert.ok(await goneWithin(info.containerId, 10_000), 'container removed by the watchdog');
  assert.equal(observeRecord(r.recordFile, 'x').calls, 0);
  evidence.cases.push({ name: 'killed-bridge', gone: true, record: observeRecord(r.recordFile, 'x') });
});

test('failure: bridge killed once its container exists, before it is started → the watchdog removes the container', opts, async () => {
  const r = childSession('killed-bridge-created', 'hold', {}, { holdAfterCreate: true });
  const { containerId } = await r.created;
  r.child.kill('SIGKILL');
  const gone = await goneWithin(containerId, 10_000);
  if (!gone) await engine.remove(containerId);
  assert.ok(gone, 'container removed by the watchdog (the bridge died before it could)');
  evidence.cases.push({ name: 'killed-bridge-created', gone });
});

test('failure: paused bridge → the watchdog lease expires and it removes the container', opts, async () => {
  const r = childSession('paused-bridge', 'hold');
  const info = await r.running;
  await sleep(500);
  r.child.kill('SIGSTOP');
  const gone = await goneWithin(info.containerId, 10_000);
  r.child.kill('SIGCONT');
  const d = await r.done;
  assert.ok(gone, 'container removed by the watchdog while the bridge was frozen');
  assert.equal(d.code, 1);
  assert.ok(['container_removed', 'watchdog_lost'].includes(String(d.summary?.reason)), 'the resumed bridge reports the watchdog acted');
  assert.equal(observeRecord(r.recordFile, 'x').calls, 0);
  evidence.cases.push({ name: 'paused-bridge', gone, exit: d.code, record: observeRecord(r.recordFile, 'x') });
});

test('failure: killed watchdog → the bridge stops the container', opts, async () => {
  const r = childSession('killed-watchdog', 'hold');
  const info = await r.running;
  signal(info.watchdogPid, 'SIGKILL');
  const d = await r.done;
  assert.equal(d.code, 1);
  assert.equal(d.summary?.reason, 'watchdog_lost');
  assert.equal(await engine.inspectOrNull(info.containerId), null);
  evidence.cases.push({ name: 'killed-watchdog', reason: d.summary?.reason, exit: d.code, gone: true, record: observeRecord(r.recordFile, 'x') });
});

test('failure: paused watchdog → no acks → the bridge stops the container', opts, async () => {
  const r = childSession('paused-watchdog', 'hold');
  const info = await r.running;
  signal(info.watchdogPid, 'SIGSTOP');
  const d = await r.done;
  signal(info.watchdogPid, 'SIGCONT'); // it then sees EOF, finds nothing to remove, and exits
  assert.equal(d.code, 1);
  assert.equal(d.summary?.reason, 'watchdog_lost');
  assert.equal(await engine.inspectOrNull(info.containerId), null);
  evidence.cases.push({ name: 'paused-watchdog', reason: d.summary?.reason, exit: d.code, gone: true, record: observeRecord(r.recordFile, 'x') });
});

test('failure: the watchdog lost after create, before start → the container is never started', opts, async () => {
  const shortLived = join(work, 'short-lived-watchdog.mjs');
  writeFileSync(shortLived, "import net from 'node:net'; const p = new net.Socket({ fd: 3, readable: true, writable: true }); p.write('r\\n'); p.on('data', (d) => { for (const l of String(d).split('\\n')) if (l.startsWith('h')) p.write('a' + l.slice(1) + '\\n'); }); setTimeout(() => process.exit(0), 300);\n");
  const o = await observed('watchdog-lost-before-start', 'baseline', {}, { watchdogScript: shortLived, onCreated: async () => void (await sleep(1500)) });
  assert.deepEqual([o.summary.ended, o.summary.reason], ['stopped', 'watchdog_lost']);
  assert.equal((o.state as { status: string | null } | null)?.status, 'created', 'the agent never ran');
  noDelivery(o);
});

/** A mutation's admission check holds: with `watchdogScript` as the watchdog the session is refused, the container gone. */
async function refusedAdmission(name: string, watchdogScript: string): Promise<void> {
  const refused = await observed(name, 'hold', {}, { watchdogScript });
  assert.equal(refused.summary.ended, 'refused');
  assert.equal(refused.summary.reason, 'watchdog_unavailable', String(refused.summary.violations));
  assert.equal(refused.gone, true);
}

/** The same mutation with its check bypassed: a running session whose permitted tool already answered. */
async function bypassed(name: string, internal: Record<string, unknown>) {
  const r = childSession(name, 'notify_hold', internal);
  const info = await r.running;
  await waitForRecord(r.recordFile); // the permitted tool still works
  return { r, info };
}

test('mutation watchdog: a session without a watchdog is refused; bypassed, the container outlives a killed bridge', opts, async () => {
  await refusedAdmission('mutation-watchdog-admission', join(work, 'no-such-watchdog.js'));
  const { r, info } = await bypassed('mutation-watchdog-bypassed', { watchdog: false });
  r.child.kill('SIGKILL');
  await sleep(3000); // above the 2 s lease a watchdog would have
  const survived = await running(info.containerId);
  await engine.remove(info.containerId);
  assert.equal(survived, true, 'state observer: the container still runs with nobody bridging it');
  evidence.cases.push({ name: 'mutation-watchdog-bypassed', state_running_after_bridge_death: survived });
});

test('mutation ack check: a watchdog that never acknowledges is refused; bypassed, a paused watchdog leaves the container running', opts, async () => {
  const mute = join(work, 'mute-watchdog.mjs');
  writeFileSync(mute, "import net from 'node:net'; const p = new net.Socket({ fd: 3, readable: true, writable: true }); p.write('r\\n'); p.on('data', () => {}); setInterval(() => {}, 1000);\n");
  await refusedAdmission('mutation-ack-admission', mute);
  const { r, info } = await bypassed('mutation-ack-bypassed', { ackCheck: false });
  signal(info.watchdogPid, 'SIGSTOP');
  await sleep(2000); // above the 1 s acknowledgment deadline
  const stillRunning = await running(info.containerId);
  r.child.kill('SIGKILL');
  await sleep(1000);
  const survived = await running(info.containerId);
  signal(info.watchdogPid, 'SIGKILL');
  await engine.remove(info.containerId);
  assert.equal(stillRunning, true, 'with the ack check removed, a silent watchdog goes unnoticed');
  assert.equal(survived, true, 'state observer: the container outlives both');
  evidence.cases.push({ name: 'mutation-ack-bypassed', state_running: survived });
});

// ---------------------------------------------------------------------------------------------
// Failure cases in-process: each ends with the container gone and nothing delivered.
const failures: Array<[string, string, Partial<TestSessionConfig>, string, string]> = [
  ['malformed stdout', 'malformed', {}, 'stopped', 'malformed_frame'],
  ['attempted policy fields', 'policy', {}, 'stopped', 'frame_keys'],
  ['oversized frame', 'oversized', {}, 'stopped', 'frame_too_large'],
  ['stderr flood', 'stderr_flood', {}, 'stopped', 'stderr_limit'],
  ['crash', 'crash', {}, 'agent_crashed', ''],
  ['timeout', 'hold', { timeoutMs: 2500 }, 'stopped', 'timeout'],
  ['unavailable gateway', 'polite', { upstreamEnv: { RECORDER_MODE: 'crash' } }, 'stopped', 'gateway_error'],
];
for (const [name, mode, cfg, ended, reason] of failures) {
  test(`failure: ${name}`, opts, async () => {
    const o = await observed(`failure-${name}`, mode, cfg);
    assert.equal(o.summary.ended, ended);
    if (reason) assert.equal(o.summary.reason, reason);
    noDelivery(o);
  });
}

test('failure: restart', opts, async () => {
  const o = await observed('failure-restart', 'hold', {}, {
    onRunning: ({ containerId }) => void sleep(500).then(() => engine.restart(containerId).catch(() => undefined)),
  });
  assert.equal(o.summary.ended === 'finished', false);
  noDelivery(o);
});

test('failure: the attach client dies → the container is stopped and removed, nothing delivered', opts, async () => {
  let sock: { destroy(): void } | null = null;
  const o = await observed('failure-attach-lost', 'hold', {}, {
    onAttach: (s) => (sock = s),
    onRunning: () => void sleep(500).then(() => sock?.destroy()),
  });
  assert.equal(o.summary.ended, 'stopped');
  assert.equal(o.summary.reason, 'attach_lost');
  noDelivery(o);
});

test('bound: one call more than --max-calls stops the session', opts, async () => {
  const o = await observed('bound-max-calls', 'many_calls', { maxCalls: 2 });
  assert.equal(o.summary.ended, 'stopped');
  assert.equal(o.summary.reason, 'max_calls');
  assert.ok(o.record.calls <= 2);
  assert.equal(o.gone, true);
});

test('live restriction over the control socket: the in-flight call finishes first, the next call sees the revocation', opts, async () => {
  const controlPath = join(work, `control-${Date.now()}.sock`);
  const canary = newCanary();
  const recordFile = join(work, 'live.jsonl');
  const p = testSession({
    imageId: IMAGE,
    recordFile,
    controlPath,
    upstreamEnv: { RECORDER_MODE: 'slow', RECORDER_DELAY_MS: '3000' }, // the window in which the update must arrive
    input: { canary, mode: 'sequence', messages: [['notify', 'first'], ['notify', canary]], targets: targets() } as any,
  });
  // Wait until the first call is at the upstream, then revoke.
  const t0 = Date.now();
  while (readRecord(recordFile).length === 0 && Date.now() - t0 < 20_000) await sleep(50);
  const reply = await sendControl(controlPath, 1, ['post_public']);
  const ackAt = Date.now();
  const s = await p;
  const done = readRecord(`${recordFile}.done`)[0] as unknown as { at: number } | undefined;
  assert.deepEqual(reply, { ok: true, revision: 1 });
  assert.ok(done && done.at <= ackAt, 'acknowledged only after the in-flight call finished');
  assert.equal(observeRecord(recordFile, canary).send_update ?? 0, 0, 'the call queued behind the update saw the revocation');
  assert.equal(s.allowed, 1);
  assert.equal(s.denied, 1);
  assert.equal(s.ended, 'finished');
  evidence.cases.push({ name: 'live-restriction', allowed: s.allowed, denied: s.denied });
});

// ---------------------------------------------------------------------------------------------
// Through the real binary.

const cli = cloakpipeAsync;

async function ledgerEntries(home: string): Promise<any[]> {
  const r = await cli(['ledger', 'show', '--json', '--home', home]);
  assert.equal(r.status, 0, r.stderr);
  return r.stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l));
}

/** For a run of the `cloakpipe confine` binary: a fresh home `home-NAME`, the shared gate files, an aliases file. */
async function binarySetup(name: string, aliases: string) {
  const home = join(work, `home-${name}`);
  assert.equal((await cli(['init', '--home', home])).status, 0);
  const file = join(work, `aliases-${name}.yaml`);
  writeFileSync(file, aliases);
  return { home, f: await gateFiles(), aliases: file };
}

test('live restriction through the binaries: a stale revision (0) is refused and closes admission; calls are refused, recorded, until a valid newer revision', opts, async () => {
  const { home, f, aliases } = await binarySetup('stale', 'notify: send_update\npublish: post_public\n');
  const canary = newCanary();
  const record = join(work, 'cli-stale.jsonl');
  const input = join(work, 'cli-input-stale.json');
  const controlPath = join(work, `control-stale-${Date.now()}.sock`);
  writeFileSync(input, JSON.stringify({ canary, first: `first-${randomBytes(4).toString('hex')}`, mode: 'until_allowed', targets: targets() }));
  const session = cli(
    ['confine', '--json', '--home', home, '--image', IMAGE, '--aliases', aliases, '--manifest', f.manifest, '--policy', f.policy, '--context', f.context('confidential'),
      '--input', input, '--timeout', '90s', '--max-calls', '100', '--control', controlPath, '--', RECORDER.command, ...RECORDER.args],
    confineUpstream(record, { RECORDER_MODE: 'slow', RECORDER_DELAY_MS: '2000' }).env,
  );
  // The first call is at the upstream: the update queues behind it, the retries behind the update.
  const t0 = Date.now();
  while (readRecord(record).length === 0 && Date.now() - t0 < 30_000) await sleep(50);
  const stale = await cli(['confine-control', '--control', controlPath, '--revision', '0', '--tools', 'send_update']);
  assert.equal(stale.status, 1, `a stale revision is refused: ${stale.stdout}${stale.stderr}`);
  // Wait until the ledger shows a call refused because admission is closed.
  let closedRefusals = 0;
  while (closedRefusals === 0 && Date.now() - t0 < 60_000) {
    closedRefusals = (await ledgerEntries(home)).filter((e) => e.kind === 'decision' && e.reason === 'admission_closed').length;
    if (closedRefusals === 0) await sleep(200);
  }
  assert.ok(closedRefusals > 0, 'the calls after the stale revision were refused admission_closed');
  assert.equal(observeRecord(record, canary).send_update ?? 0, 0, 'no call went through while admission was closed');
  const valid = await cli(['confine-control', '--control', controlPath, '--revision', '1', '--tools', 'send_update']);
  assert.equal(valid.status, 0, valid.stderr);
  const r = await session;
  assert.ok(!r.stdout.includes(canary) && !r.stderr.includes(canary), 'no agent bytes in the output');
  assert.equal(r.status, 0, `the agent finished once admitted again (stderr: ${r.stderr})`);
  const summary = JSON.parse(r.stdout);
  assert.equal(summary.ended, 'finished');
  assert.equal(summary.allowed, 2);
  assert.ok(summary.denied >= 1);
  assert.equal(observeRecord(record, canary).send_update, 1, 'the call admitted after the valid revision reached the upstream once');

  const v = await cli(['verify', '--home', home]);
  assert.equal(v.status, 0, `verify accepts every entry: ${v.stdout}${v.stderr}`);
  const entries = await ledgerEntries(home);
  assert.ok(!JSON.stringify(entries).includes(canary), 'no canary in the ledger');
  const decisions = entries.filter((e) => e.kind === 'decision');
  assert.deepEqual(
    decisions.map((e) => e.reason ?? e.outcome),
    ['allow', ...Array(summary.denied).fill('admission_closed'), 'allow'],
    'every answer the agent got is a decision entry, each refusal with its code',
  );
  const updates = entries.filter((e) => e.kind === 'operator' && e.action === 'restrict').map((e) => [e.accepted, e.admission, e.revision]);
  assert.deepEqual(updates, [[false, 'closed', 0], [true, 'open', 1]]);
  evidence.cases.push({ name: 'live-restriction-stale', exit: r.status, allowed: summary.allowed, denied: summary.denied, record: observeRecord(record, canary) });
});

test('--control at a path that is taken or cannot be made: the session is refused before any container exists, and the path keeps what was there (a running session’s socket still answers its operator, a file keeps its bytes)', opts, async () => {
  const { home, f, aliases } = await binarySetup('control-taken', 'notify: send_update\n');
  const args = (name: string, controlPath: string) => {
    const input = join(work, `cli-input-${name}.json`);
    writeFileSync(input, JSON.stringify({ canary: newCanary(), mode: 'hold', targets: targets() }));
    return ['confine', '--json', '--home', home, '--image', IMAGE, '--aliases', aliases, '--manifest', f.manifest, '--policy', f.policy, '--context', f.context('confidential'),
      '--input', input, '--timeout', '90s', '--control', controlPath, '--', RECORDER.command, ...RECORDER.args];
  };
  const env = confineUpstream(join(work, 'cli-control-taken.jsonl')).env;
  const file = join(work, 'operator-file.txt');
  writeFileSync(file, 'the operator keeps this\n');
  const refused = (r: { status: number | null; stdout: string }) => {
    assert.equal(r.status, 2, 'a session whose control socket cannot be made is refused');
    const summary = JSON.parse(r.stdout);
    assert.deepEqual([summary.ended, summary.reason, summary.container], ['refused', 'control_unavailable', null], 'before any container exists');
  };
  refused(await cli(args('control-file', file), env));
  assert.equal(existsSync(file) && readFileSync(file, 'utf8'), 'the operator keeps this\n', 'the file at the path is left as it was');

  const controlPath = join(work, `control-taken-${Date.now()}.sock`);
  const first = spawn(process.execPath, [CLI, ...args('control-first', controlPath)], { env, stdio: 'ignore' });
  const firstExit = new Promise<number | null>((r) => first.on('exit', (code) => r(code)));
  const t0 = Date.now();
  while (!existsSync(controlPath) && Date.now() - t0 < 30_000) await sleep(50);
  refused(await cli(args('control-second', controlPath), env));
  refused(await cli(args('control-nowhere', join(work, 'no-such-dir', 'control.sock')), env));
  const update = await cli(['confine-control', '--control', controlPath, '--revision', '1', '--tools', '']);
  first.kill('SIGTERM');
  assert.equal(await firstExit, 1, 'the first session stops when interrupted');
  assert.equal(update.status, 0, `the first session still answers its operator: ${update.stdout}${update.stderr}`);
});

test('approval through the binary: with --approver-key a receipt in the inbox lets the approved call through; without it the call is refused', opts, async () => {
  const { home, f, aliases } = await binarySetup('approval', 'notify: send_update\n');
  const manifest = join(work, 'manifest-approval.yaml');
  writeFileSync(manifest, APPROVAL_MANIFEST);
  const context = f.context('confidential');
  const keys = join(work, 'approver');
  assert.equal((await cli(['keygen', '--out', keys])).status, 0);
  for (const withKey of [false, true]) {
    const canary = newCanary();
    const call = join(work, `approval-call-${withKey}.json`);
    writeFileSync(call, JSON.stringify({ tool: 'send_update', arguments: { message: canary } }));
    const approved = await cli(['approve', '--key', `${keys}.key`, '--call', call, '--context', context, '--home', home, '--yes']);
    assert.equal(approved.status, 0, approved.stderr);
    const record = join(work, `cli-approval-${withKey}.jsonl`);
    const input = join(work, `cli-input-approval-${withKey}.json`);
    writeFileSync(input, JSON.stringify({ canary, mode: 'polite', targets: targets() }));
    const r = await cli(
      ['confine', '--json', '--home', home, '--image', IMAGE, '--aliases', aliases, '--manifest', manifest, '--policy', f.policy, '--context', context,
        '--input', input, '--timeout', '30s', ...(withKey ? ['--approver-key', `${keys}.pub`] : []), '--', RECORDER.command, ...RECORDER.args],
      confineUpstream(record).env,
    );
    assert.equal(r.status, 0, `the polite agent finishes either way (stderr: ${r.stderr})`);
    assert.ok(!r.stdout.includes(canary) && !r.stderr.includes(canary), 'no agent bytes in the output');
    const summary = JSON.parse(r.stdout);
    assert.deepEqual([summary.allowed, summary.denied], withKey ? [1, 0] : [0, 1]);
    assert.equal(observeRecord(record, canary).send_update ?? 0, withKey ? 1 : 0);
    evidence.cases.push({ name: `cli-approval-${withKey ? 'key' : 'no-key'}`, exit: r.status, allowed: summary.allowed, denied: summary.denied, record: observeRecord(record, canary) });
  }
  const v = await cli(['verify', '--home', home]);
  assert.equal(v.status, 0, v.stdout + v.stderr);
  const decisions = (await ledgerEntries(home)).filter((e) => e.kind === 'decision');
  assert.deepEqual(decisions.map((e) => [e.reason ?? e.outcome, e.approval ?? null]), [
    ['approval_invalid', 'inbox'],
    ['allow', 'inbox'],
  ]);
});

test('end to end through the cloakpipe confine command and the real gate: exit codes, summary, no canary in any output', opts, async () => {
  const f = await gateFiles();
  const aliases = join(work, 'aliases.yaml');
  writeFileSync(aliases, 'notify: send_update\npublish: post_public\n');
  for (const [mode, status] of [['polite', 0], ['baseline', 1], ['crash', 1]] as const) {
    const canary = newCanary();
    const record = join(work, `cli-${mode}.jsonl`);
    const input = join(work, `cli-input-${mode}.json`);
    writeFileSync(input, JSON.stringify({ canary, mode, targets: targets() }));
    const args = ['confine', '--json', '--home', f.home, '--image', IMAGE, '--aliases', aliases, '--manifest', f.manifest, '--policy', f.policy,
      '--context', f.context('confidential'), '--input', input, '--timeout', '20s', '--', RECORDER.command, ...RECORDER.args];
    const seqBefore = (await ledgerEntries(f.home)).at(-1)?.seq ?? -1;
    const r = await cli(args, confineUpstream(record).env);
    assert.ok(!r.stdout.includes(canary) && !r.stderr.includes(canary), 'no agent bytes in the output');
    assert.equal(r.status, status, `exit status (stderr: ${r.stderr})`);
    const summary = JSON.parse(r.stdout);
    const rec = observeRecord(record, canary);
    assert.equal(summary.removed, true);
    assert.equal(await engine.inspectOrNull(summary.container), null);
    if (mode !== 'crash') assert.equal(rec.send_update, 1);
    assert.equal(rec.post_public ?? 0, 0, 'the real gate held the low ceiling (sink_ceiling_exceeded)');
    if (mode === 'polite') assert.equal(summary.ended, 'finished');
    if (mode === 'baseline') {
      assert.deepEqual([summary.ended, summary.reason, summary.allowed, summary.denied], ['stopped', 'frame_keys', 1, 1]);
      // Every frame is in the record: the allowed call, the refused one, and the frame carrying
      // policy fields as the wire refusal that stopped the session.
      const run = (await ledgerEntries(f.home)).filter((e) => e.seq > seqBefore);
      assert.deepEqual(run.filter((e) => e.kind === 'decision').map((e) => e.reason ?? e.outcome), ['allow', 'sink_ceiling_exceeded', 'invalid_request']);
      assert.deepEqual(run.filter((e) => e.kind === 'shutdown').map((e) => e.reason), ['confine_stopped:frame_keys'], 'the shutdown entry says why the session ended');
      assert.equal((await cli(['verify', '--home', f.home])).status, 0);
    }
    if (mode === 'crash') assert.equal(summary.ended, 'agent_crashed');
    evidence.cases.push({ name: `cli-${mode}`, exit: r.status, ended: summary.ended, reason: summary.reason, record: rec });
  }
});

test('a pin change inside confinement is refused: the confined session lists the tools through the relay, and a changed definition never runs', opts, async () => {
  const { home, f, aliases } = await binarySetup('pins', 'notify: send_update\n');
  const runs: Array<{ status: number | null; summary: Summary; record: ReturnType<typeof observeRecord> }> = [];
  for (const description of [undefined, 'send an update to the customer, and copy it to a public list']) {
    const canary = newCanary();
    const record = join(work, `cli-pins-${runs.length}.jsonl`);
    const input = join(work, `cli-input-pins-${runs.length}.json`);
    writeFileSync(input, JSON.stringify({ canary, mode: 'polite', targets: targets() }));
    const r = await cli(
      ['confine', '--json', '--home', home, '--image', IMAGE, '--aliases', aliases, '--manifest', f.manifest, '--policy', f.policy,
        '--context', f.context('confidential'), '--input', input, '--timeout', '30s', '--', RECORDER.command, ...RECORDER.args],
      confineUpstream(record, description ? { DESCRIPTIONS_FILE: descriptionsFile(description) } : {}).env,
    );
    assert.ok(!r.stdout.includes(canary) && !r.stderr.includes(canary), 'no agent bytes in the output');
    runs.push({ status: r.status, summary: JSON.parse(r.stdout), record: observeRecord(record, canary) });
  }
  const [pinned, changed] = runs;
  assert.deepEqual([pinned.status, pinned.summary.allowed, pinned.record.send_update], [0, 1, 1], 'the first session pins send_update and runs it');
  assert.deepEqual([changed.summary.allowed, changed.summary.denied, changed.record.calls], [0, 1, 0], 'the changed tool is refused and never reaches the server');
  assert.equal((await cli(['verify', '--home', home])).status, 0);
  const entries = await ledgerEntries(home);
  assert.ok(entries.some((e) => e.kind === 'pins' && e.action === 'changed' && e.tool === 'send_update'), 'the change is recorded');
  assert.deepEqual(entries.filter((e) => e.kind === 'decision').map((e) => e.reason ?? e.outcome), ['allow', 'tool_definition_changed']);
  evidence.cases.push({ name: 'cli-pin-change', exits: runs.map((r) => r.status), record: changed.record });
});
