// Structured logs: allow-listed fields only, undeclared tool names as digests, and a failing
// sink that leaks neither its exception text nor the payload.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { LOG_FLUSH_MS, log, logFailures, setLogSink, setLogLevel } from '../../src/telemetry/log.js';
import { sanitize, setDeclaredTools } from '../../src/telemetry/fields.js';
import { digestJson } from '../../src/core/digest.js';
import { canary, captureOutput } from '../helpers/capture.js';

function collect(): string[] {
  const lines: string[] = [];
  setLogSink((l) => void lines.push(l));
  return lines;
}

test('a line is one JSON object: ts, level, event first, then the allowed fields', () => {
  const lines = collect();
  setDeclaredTools(['send_email']);
  const fp = digestJson({ a: 1 });
  log.info('decision', { tool: 'send_email', outcome: 'refuse', reason: 'policy_denied', fingerprint: fp, entry: 7, decide_ms: 1.5, session_label: 'internal' });
  assert.equal(lines.length, 1);
  assert.ok(lines[0].endsWith('\n') && !lines[0].slice(0, -1).includes('\n'));
  const obj = JSON.parse(lines[0]);
  assert.deepEqual(Object.keys(obj).slice(0, 3), ['ts', 'level', 'event']);
  assert.match(obj.ts, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  assert.deepEqual({ ...obj, ts: undefined }, {
    ts: undefined, level: 'info', event: 'decision', tool: 'send_email', outcome: 'refuse', reason: 'policy_denied', fingerprint: fp, entry: 7, decide_ms: 1.5, session_label: 'internal',
  });
  setLogSink(null);
});

test('values outside their kind, unknown field names and undeclared tool names never appear', () => {
  const lines = collect();
  setDeclaredTools(['send_email']);
  const c = canary('log');
  log.warn('decision', {
    tool: c, // undeclared: becomes tool_digest
    reason: c, // not a refusal code
    fingerprint: c, // not a digest
    outcome: `${c} x`,
    session_label: `${c}\nforged`,
    entry: c as unknown as number,
    task: `"${c}"`,
    arguments: c, // not an allowed name
    [c]: 1,
    method: c,
  });
  log.error(c); // a bad event name
  const out = lines.join('');
  assert.ok(!out.includes(c), out);
  const obj = JSON.parse(lines[0]);
  assert.equal(obj.tool_digest, digestJson(c));
  assert.equal(obj.dropped, 2);
  assert.equal(obj.redacted, 7);
  assert.equal(JSON.parse(lines[1]).event, 'invalid_event');
  setLogSink(null);
});

test('sanitize keeps what it allows and never reports names it dropped', () => {
  setDeclaredTools([]);
  assert.deepEqual(sanitize({ count: 3, pid: -1, declared: true, mode: 'shadow', method: 'tools/call', why: undefined }), {
    count: 3, declared: true, mode: 'shadow', method: 'tools/call', redacted: 1,
  });
  assert.deepEqual(sanitize({ __proto__: 'x', constructor: 'y' } as never), { dropped: 1 });
});

test('every method the official SDK names is logged in clear, and an unknown one is not', () => {
  // The SDK's own schemas, not a list copied here: a method a new MCP revision adds shows up as a failure.
  const types = readFileSync(fileURLToPath(import.meta.resolve('@modelcontextprotocol/sdk/types.js')), 'utf8');
  const methods = [...new Set([...types.matchAll(/method: z\.literal\(['"]([^'"]+)['"]\)/g)].map((m) => m[1]))];
  assert.ok(methods.length >= 30 && methods.includes('tasks/result'), methods.join());
  for (const method of methods) assert.deepEqual(sanitize({ method }), { method }, method);
  assert.deepEqual(sanitize({ method: 'tasks/forged' }), { redacted: 1 });
});

test('levels below the threshold are not written', () => {
  const lines = collect();
  log.debug('quiet');
  setLogLevel('debug');
  log.debug('loud');
  setLogLevel('info');
  assert.deepEqual(lines.map((l) => JSON.parse(l).event), ['loud']);
  setLogSink(null);
});

test('the default sink is stderr: the lines of a burst leave together, within LOG_FLUSH_MS', async () => {
  const cap = captureOutput();
  const writes = cap.stderrWrites;
  try {
    setLogSink(null);
    for (let i = 1; i <= 3; i++) log.info('hello', { count: i });
    assert.equal(writes.length, 0, 'held: not written in the turn that made them');
    await new Promise((r) => setTimeout(r, LOG_FLUSH_MS * 4));
  } finally {
    cap.restore();
  }
  assert.equal(writes.length, 1, 'one write for the burst');
  const said = writes[0].trim().split('\n').map((l) => JSON.parse(l));
  assert.deepEqual(said.map((o) => [o.event, o.count]), [['hello', 1], ['hello', 2], ['hello', 3]]);
});

test('a warning leaves at once, after the info lines held before it, in one write', () => {
  const cap = captureOutput();
  const writes = cap.stderrWrites;
  try {
    setLogSink(null);
    log.info('hello', { count: 1 });
    log.warn('telemetry_failure', { count: 2 });
  } finally {
    cap.restore();
  }
  assert.equal(writes.length, 1);
  assert.deepEqual(writes[0].trim().split('\n').map((l) => [JSON.parse(l).event, JSON.parse(l).count]), [['hello', 1], ['telemetry_failure', 2]]);
});

test('lines still held when the process exits are written, also on process.exit() in the turn that made them', () => {
  const src = `import { log } from ${JSON.stringify(new URL('../../src/telemetry/log.js', import.meta.url).href)};
log.info('last_words', { count: 7 }); log.warn('before_exit', { count: 8 }); process.exit(3);`;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', src], { encoding: 'utf8' });
  assert.equal(r.status, 3);
  const said = r.stderr.trim().split('\n').map((l) => JSON.parse(l));
  assert.deepEqual(said.map((o) => [o.event, o.count]), [['last_words', 7], ['before_exit', 8]]);
});

test('a failing sink (throwing, rejecting, throwing non-errors) leaks neither its exception text nor the payload', async () => {
  const c = canary('sink');
  const cap = captureOutput();
  const before = logFailures();
  const unhandled: unknown[] = [];
  const onUnhandled = (e: unknown) => void unhandled.push(e);
  process.on('unhandledRejection', onUnhandled);
  try {
    setDeclaredTools([c]); // even a declared name (a payload in the line) must not escape via the failure
    setLogSink(() => {
      throw new Error(`sink exploded: ${c}`);
    });
    log.error('decision', { tool: c, count: 1 });
    setLogSink(async () => {
      throw new Error(`async sink exploded: ${c}`);
    });
    log.error('decision', { tool: c });
    setLogSink(() => {
      throw { toString: () => c, get message() { return c; } };
    });
    log.error('decision', { tool: c });
    await new Promise((r) => setTimeout(r, 20));
  } finally {
    setLogSink(null);
    setDeclaredTools([]);
    process.off('unhandledRejection', onUnhandled);
    cap.restore();
  }
  assert.equal(logFailures() - before, 3);
  assert.equal(unhandled.length, 0);
  assert.ok(!cap.text().includes(c), cap.text());
});
