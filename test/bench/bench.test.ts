// Smoke test of the benchmark scripts: each runs with a tiny N and prints its table. No figure
// is asserted on (tests never assert on wall-clock time); only that every script completes and
// prints what docs/performance.md is made from.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { ROOT } from '../helpers/cli.js';
import { pgSkip } from '../store/postgres/pg.js';

const BENCH = join(ROOT, 'dist/bench');

function run(script: string, args: string[]) {
  const r = spawnSync(process.execPath, [join(BENCH, script), ...args], { encoding: 'utf8', timeout: 300_000 });
  assert.equal(r.status, 0, `${script} exited ${r.status}: ${r.stderr.slice(-2000)}`);
  return r.stdout;
}

/** A figure as bench/lib.ts `ms` writes it: three decimals below 10 ms, one below 100, none above
 *  (a slow or loaded machine's p99 passes 10 ms). */
const MS = String.raw`-?\d+(?:\.\d{1,3})?`;

test('overhead: direct, relay, durable relay and gate, with the added latency, the targets and their floors', () => {
  const out = run('overhead.js', ['--n', '20', '--warmup', '2', '--chunk', '10']);
  assert.match(out, /## Overhead: 20 sequential/);
  for (const row of ['| direct ', '| relay (line copy) ', "| durable relay (a signed, fsync'd record per call) ", '| durable relay, two signed records per call (a decision, a result) ', '| the same relay without its fsync (not durable) ', '| gate (enforce, Cedar, ledger, durable) ', 'added p50 per gated call', 'load before the run']) assert.ok(out.includes(row), row);
  for (const row of ['floor: a signed record made durable before forwarding (durable relay − direct, p50)', 'floor: the same, p99', 'of which the fsync (durable relay − the same without its fsync, p50)', "floor of the gate's evidence: two signed records per call in one commit (that relay − direct, p50)", "floor of the gate's evidence, p99"]) assert.match(out, new RegExp(`\\| ${row.replace(/[()]/g, '\\$&')} +\\| +— \\| +${MS} ms \\| +floor \\|`), row);
  assert.match(out, new RegExp(String.raw`\| gate added p50 over its warm-up \(its first 2 calls, not in the figures above\) +\| +— \| +${MS} ms \| +warm-up \|`));
});

test('readable: the model\'s reading of each kind of text beside one rule\'s scan', () => {
  const out = run('readable.js', ['--n', '20', '--warmup', '2']);
  assert.match(out, /## Readable: the model's reading of 1 KiB of text, 20 runs each/);
  for (const [text, twice] of [['ASCII', 'no'], ['Latin with accents', 'no'], ['Russian', 'yes'], ['Greek', 'yes']]) assert.match(out, new RegExp(`\\| ${text} +\\| +[0-9.]+ \\| +[0-9.]+ \\| +[0-9.]+ \\| +${twice} \\|`), text);
});

test('throughput: 1, 8 and 64 in flight on each path', () => {
  const out = run('throughput.js', ['--n', '64', '--warmup', '8']);
  assert.match(out, /## Throughput/);
  for (const level of [1, 8, 64]) assert.match(out, new RegExp(`\\| gate \\(enforce, Cedar, ledger, durable\\) +\\| +${level} \\|`));
  assert.ok(out.includes('gated calls/s, 64 in flight'));
});

test('peers: supergateway and mcp-proxy relay the same calls (as stdio→HTTP→stdio pairs)', () => {
  const out = run('peers.js', ['--n', '10', '--warmup', '2', '--chunk', '5']);
  for (const row of ['| supergateway (stdio→SSE→stdio, 2 procs) ', '| mcp-proxy (stdio→HTTP stream→stdio, 2 procs) ', "| durable relay (a signed, fsync'd record per call) ", 'no stdio→stdio mode']) assert.ok(out.includes(row), row);
});

test('spaced: the same paths with a pause before every call, the gate beside supergateway', () => {
  const out = run('spaced.js', ['--n', '3', '--gap', '20', '--warmup', '2']);
  assert.match(out, /## Spaced: 3 calls per path, one every 20 ms \(warm-up 2 back to back\), in turns/);
  for (const name of ['direct', 'relay \\(line copy\\)', "durable relay \\(a signed, fsync'd record per call\\)", 'gate \\(enforce, Cedar, ledger, durable\\)', 'supergateway \\(stdio→SSE→stdio, 2 procs\\)', 'mcp-proxy \\(stdio→HTTP stream→stdio, 2 procs\\)'])
    assert.match(out, new RegExp(`\\| ${name} +\\| +3 \\| +${MS} \\| +${MS} \\|`), name);
  assert.match(out, new RegExp(`The gate adds ${MS} ms here against ${MS} ms for supergateway \\(-?\\d+\\.\\d\\d×\\)`));
});

test('http: the HTTP door beside server-everything direct over HTTP, supergateway and mcp-proxy in their HTTP modes', () => {
  const out = run('http.js', ['--n', '10', '--warmup', '2']);
  assert.match(out, /## HTTP: 10 tools\/call round trips/);
  for (const row of ['| direct (server-everything over HTTP) ', '| gate http-proxy --upstream-url (HTTP → HTTP) ', '| gate http-proxy (HTTP → stdio) ', '| supergateway 4.0.0 (HTTP → stdio) ', '| mcp-proxy 6.7.19 (HTTP → stdio) ']) assert.ok(out.includes(row), row);
  // The goal rows, each with its status (ADR 040: the goal as written and the closest ones).
  for (const row of ['HTTP door vs pure HTTP transports, added p50', 'HTTP door calls/s vs pure HTTP transports, 64 in flight', 'HTTP door added p50 beyond the gate floor vs pure transports'])
    assert.match(out, new RegExp(`\\| ${row} +\\| [^|]+\\| [^|]+\\| +(met|MISSED) \\|`), row);
  assert.match(out, /\| floor: in-process Gate\.handleCall .*\| +floor \|/);
});

test('http: the goal beyond the gate floor is met only when the floor is under the door and the rest under the pure transports', async () => {
  const { beyondFloorTarget } = await import(join(ROOT, 'dist/bench/http.js'));
  assert.equal(beyondFloorTarget(0.5, 0.35, 0.2).met, true); // 0.15 beyond, against 0.2
  assert.equal(beyondFloorTarget(0.6, 0.35, 0.2).met, false); // 0.25 beyond
  assert.equal(beyondFloorTarget(0.5, 0.35, 0).met, false); // a pure transport measured at nothing
  // The run of 2026-12-05: a floor of 1.003 ms above the door's whole 0.461 ms.
  const apart = beyondFloorTarget(0.461, 1.003, 0.187);
  assert.equal(apart.met, false);
  assert.match(apart.measured, /^-0\.542 vs 0\.187 ms \(added 0\.461 − floor 1\.003: the floor is above the added p50, not comparable\)$/);
});

test('breakdown: every step of a gated call, floors and the end-to-end difference', () => {
  const out = run('breakdown.js', ['--n', '10', '--warmup', '2', '--scale', '0.01']);
  for (const row of ['parse: decodeLine', 'Cedar as before ADR 039', 'Cedar: the request the engine sends', 'Cedar: engine.evaluate', 'sign: signEntry', 'gate commit', 'floor: bare SQLite commit', 'in-process gate', 'end to end: gate − direct, p50', 'rate_calls rows']) assert.ok(out.includes(row), row);
  // The one-call timeline read the gate's own decision log: each of its parts has a figure.
  for (const part of ['decide_ms', 'commit_ms', 'upstream_ms']) assert.match(out, new RegExp(`\\(${part}[^|]*\\|\\s+\\d+\\.\\d+ \\|`), part);
});

test('frames: the pages each commit writes, by table and index, for the gate and the durable relay', () => {
  const out = run('frames.js', ['--n', '40', '--commits', '20']);
  assert.match(out, /## Frames: what each commit writes, 40 sequential calls per path \(the newest 20 commits\)/);
  // The relay writes its one table; the gate its entries and the rate rows (the bench policy reads
  // context.calls), in ledger.db: read from the real WALs, so the names are SQLite's own.
  assert.match(out, /\| durable relay \| +floor\.db \| +all \| +20 \| +\d+\.\d\d \|/);
  assert.match(out, /\| +\| +\| +records \| +\| +\d+\.\d\d \|/);
  assert.match(out, /\| gate +\| +ledger\.db \| +all \| +\d+ \| +\d+\.\d\d \|/);
  for (const owner of ['entries', 'rate_calls', 'rate_calls_tool_n']) assert.match(out, new RegExp(`\\| +\\| +\\| +${owner} \\| +\\| +\\d+\\.\\d\\d \\|`), owner);
});

test('startup: the first answer through each path from a fresh process, and the CLI beside node -e 0', () => {
  const out = run('startup.js', ['--n', '2', '--warmup', '0']);
  assert.match(out, /## Start-up: 2 fresh processes per path \(first 0 dropped\), in turns/);
  for (const name of ['direct', 'relay \\(line copy\\)', 'gate \\(enforce, Cedar, ledger, durable\\)', 'node -e 0', 'cloakpipe --version', 'cloakpipe mcp-proxy --help'])
    assert.match(out, new RegExp(`\\| ${name} +\\| +2 \\| +${MS} \\|`), name);
  // The gate's row names what it adds to the upstream alone.
  assert.match(out, new RegExp(`\\| gate \\(enforce, Cedar, ledger, durable\\) +\\| +2 \\| +${MS} \\| +${MS} \\| +${MS} \\| +${MS} \\|`));
});

test('verify: raw Ed25519 rate on one and all cores, and the verifier or its TODO', () => {
  const out = run('verify.js', ['--sizes', '100', '--ref', '100', '--seconds', '0.2']);
  assert.ok(out.includes('node:crypto Ed25519 verify, 1 thread'));
  assert.ok(out.includes('worker threads (all cores)'));
  assert.ok(out.includes('| ledger entries ') || out.includes('TODO: `cloakpipe verify`'));
  assert.ok(out.includes('Reference pass'));
});

test('offload: signing inline, on a worker in batches and one at a time (ADR 031)', () => {
  const out = run('offload.js', ['--n', '128']);
  for (const row of ['| inline: Ed25519 sign of the canonical body, main thread ', '| worker, batches of 64 ', '| worker, one at a time ']) assert.ok(out.includes(row), row);
});

test('all: one table with every target of issue 16, its figure, goal, status and load, from the scripts of this run', () => {
  const out = run('all.js', ['--quick', '--only', 'overhead,throughput,peers']);
  assert.match(out, /## Targets \(issue 16\), this run/);
  const targets = out.slice(out.indexOf('## Targets (issue 16)'));
  assert.match(targets, /load average \(1 min\) at the start of the run: \d+\.\d\d/);
  for (const name of ['added p50, 1 in flight', 'added p99, 1 in flight', 'gate CPU per call, 64 in flight', 'calls/s, 64 in flight', "gate vs supergateway's added p50"]) {
    const row = targets.split('\n').find((l) => l.startsWith(`| ${name} `));
    assert.ok(row, name);
    // The status column is right-aligned: `|    met |` as well as `| missed |`.
    assert.match(row, /\| +(met|missed) \| +\d+\.\d\d \|$/, `${name}: a figure, a status and the load: ${row}`);
    assert.doesNotMatch(row, /not measured/);
  }
  // verify was not run: its row says so rather than inventing a figure.
  assert.match(targets, /\| verify entries\/s vs raw Ed25519, all cores +\| +\| +not measured/); // right-aligned: the column is as wide as its widest figure
});

test('fleet: one SQLite gate against 1, 2 and 4 gates on one PostgreSQL, shared task and a task per gate', pgSkip, () => {
  const out = run('fleet.js', ['--n', '24', '--warmup', '2', '--gates', '1,2', '--in-flight', '2']);
  assert.match(out, /## Fleet: 24 calls/);
  for (const row of [/\| sqlite +\| +1 \| +shared \|/, /\| postgres +\| +1 \| +shared \|/, /\| postgres +\| +2 \| +shared \|/, /\| postgres +\| +2 \| +per gate \|/]) assert.match(out, row);
  assert.ok(out.includes('PostgreSQL CPU µs/call'));
});

test('token-key: signing and the gate with the key in SoftHSM against the key in the home', () => {
  const out = run('token-key.js', ['--n', '30', '--warmup', '3', '--micro', '50']);
  if (out.includes('not measured: SoftHSM2 is not installed')) {
    assert.notEqual(process.env.CI, 'true', 'in CI the token benchmark must run');
    return;
  }
  for (const row of ['| file key (node:crypto) ', '| token key (SoftHSM2, CKM_EDDSA) ', '| gate, file key ', '| gate, token key ', 'calls/s with the token key']) assert.ok(out.includes(row) || out.includes(row.replace('calls/s', 'Calls/s')), row);
});

test('llm: the added latency of the LLM door to the first text token and to a tool call, both formats', () => {
  const out = run('llm.js', ['--n', '3', '--warmup', '1']);
  assert.match(out, /## LLM door: added latency on a streamed response/);
  for (const row of ['| openai: first text token ', '| openai: tool call usable (finish event) ', '| anthropic: first text token ', '| anthropic: tool call usable (finish event) ']) assert.ok(out.includes(row), row);
});
