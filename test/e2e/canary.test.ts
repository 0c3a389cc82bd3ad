// Canary probes through the real gate binary: canaries in arguments, in results, in upstream
// errors (JSON-RPC errors and isError results), in malformed upstream output and in upstream
// stderr, and in an undeclared tool's name. Each canary demonstrably reaches the tool or the
// host (positive control: the flow server's own record, the echo, the error the host sees) and
// is absent from the ledger database and its WAL, the operations database, the spans an
// OpenTelemetry exporter received (the real SDK, preloaded as an operator would), and the
// gate's own stderr log lines; the digests that stand for them are present.
//
// Upstream stderr is the server's stream, passed to the gate's stderr unchanged (product.md
// section 2): its canary must appear there only inside the very line the server wrote.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { call } from '../helpers/recording-gate.js';
import { ledgerOf } from '../helpers/support-desk.js';
import { flowSetup, records, spansOf, startFlowGate, type FlowSetup } from '../helpers/flow-gate.js';
import { canary } from '../helpers/capture.js';
import { digestJson } from '../../src/core/digest.js';

function storeBytes(s: FlowSetup): Record<string, string> {
  const out: Record<string, string> = {};
  for (const f of ['ledger.db', 'ledger.db-wal', 'operations.db', 'operations.db-wal']) {
    const p = join(s.home, f);
    if (existsSync(p)) out[f] = readFileSync(p).toString('latin1'); // bytes as-is: UTF-8 canaries are ASCII
  }
  return out;
}

test('canaries reach the tool and the host, never the ledger, the operations store, spans or the gate\'s logs', async () => {
  const C = {
    arg: canary('arg'),
    refusedArg: canary('refused-arg'),
    invalidArg: canary('invalid-arg'),
    result: canary('result'),
    error: canary('error'),
    malformed: canary('malformed'),
    stderr: canary('stderr'),
    toolName: canary('toolname'),
  };
  const all = Object.values(C);
  const s = flowSetup();
  const g = await startFlowGate(s, {
    otel: true,
    flags: ['--call-timeout', '2s'],
    env: { FLOW_RESULT_CANARY: C.result, FLOW_ERROR_CANARY: C.error, FLOW_MALFORMED_CANARY: C.malformed, FLOW_STDERR_CANARY: C.stderr },
  });
  const seenByHost: string[] = [];
  let whileRunning: Record<string, string>;
  try {
    // Arguments: the echo returns the canary, the record shows it arrived.
    const echoed = await call(g, 'echo', { text: C.arg });
    assert.ok(echoed.ok);
    seenByHost.push(echoed.text);
    // Results: the record's text holds the result canary.
    const read = await call(g, 'read_record', { id: 'R-1' });
    assert.ok(read.ok);
    seenByHost.push(read.text);
    // A refused call's argument (the session is confidential now; the sink accepts public).
    const refused = await call(g, 'post_public', { text: C.refusedArg });
    assert.equal(refused.ok ? 'ok' : refused.reason, 'sink_ceiling_exceeded');
    seenByHost.push(JSON.stringify(refused));
    // An invalid argument value (over max_len).
    const invalid = await call(g, 'echo', { text: 'x'.repeat(2000) + C.invalidArg });
    assert.equal(invalid.ok ? 'ok' : invalid.reason, 'argument_invalid');
    seenByHost.push(JSON.stringify(invalid));
    // An undeclared tool whose name is a canary.
    const undeclared = await call(g, C.toolName, { text: 'x' });
    assert.equal(undeclared.ok ? 'ok' : undeclared.reason, 'undeclared_tool');
    seenByHost.push(JSON.stringify(undeclared));
    // Upstream errors: a JSON-RPC error and an isError result.
    const rpcError = await call(g, 'fail_rpc', { text: 'x' });
    assert.ok(!rpcError.ok);
    seenByHost.push(rpcError.message);
    const toolError = await call(g, 'fail_tool', { text: 'x' });
    assert.ok(toolError.ok);
    seenByHost.push(toolError.text);
    // Upstream stderr.
    assert.ok((await call(g, 'noisy', { text: 'x' })).ok);
    // Malformed upstream output: the line is dropped (product.md 7a); the call's outcome is unknown.
    const malformed = await call(g, 'malformed', { text: 'x' });
    assert.equal(malformed.ok ? 'ok' : malformed.reason, 'outcome_unknown');
    whileRunning = storeBytes(s);
  } finally {
    await g.close();
  }
  const afterClose = storeBytes(s);

  // Positive controls: each canary demonstrably went where it was meant to go.
  const arrived = records(s);
  assert.ok(arrived.some((r) => r.tool === 'echo' && r.arguments.text === C.arg), 'the argument reached the tool');
  assert.ok(!arrived.some((r) => JSON.stringify(r).includes(C.refusedArg)), 'the refused argument did not reach the tool');
  assert.ok(arrived.some((r) => r.tool === 'malformed'), 'the malformed-output tool ran');
  // The gate dropped the server's broken line: the host's SDK was never given anything it could not parse.
  assert.deepEqual(g.hostErrors.filter((e) => /JSON/.test(e)), [], 'the broken line did not reach the host');
  const host = seenByHost.join('\n');
  for (const c of [C.arg, C.result, C.error]) assert.ok(host.includes(c), `the host saw ${c}`);
  for (const c of [C.refusedArg, C.invalidArg, C.toolName]) assert.ok(!host.includes(c), `refusals do not echo ${c}`);
  const stderr = g.stderr();
  assert.ok(stderr.includes(`upstream stderr: ${C.stderr}\n`), 'upstream stderr passes through');

  // Absent from the stores, on disk, while running (WAL) and after close.
  for (const [when, files] of [['running', whileRunning!], ['closed', afterClose]] as const) {
    assert.ok(Object.keys(files).includes('ledger.db'));
    for (const [file, bytes] of Object.entries(files)) for (const c of all) assert.ok(!bytes.includes(c), `${c} in ${file} (${when})`);
  }

  // Absent from spans; the spans carry the digests and codes.
  const spans = spansOf(s);
  const spanText = JSON.stringify(spans);
  for (const c of all) assert.ok(!spanText.includes(c), `${c} in spans`);
  assert.equal(spans.length, 9, 'one span per decision');
  const byTool = (t: string) => spans.filter((x) => x.attributes['cloakpipe.tool'] === t);
  assert.equal(byTool('post_public')[0].attributes['cloakpipe.reason'], 'sink_ceiling_exceeded');
  assert.equal(byTool('post_public')[0].attributes['cloakpipe.session_label'], 'confidential');
  const undeclaredSpan = spans.find((x) => x.attributes['cloakpipe.tool_digest'] === digestJson(C.toolName));
  assert.ok(undeclaredSpan, 'the undeclared tool appears as its digest');
  assert.equal(undeclaredSpan.attributes['cloakpipe.reason'], 'undeclared_tool');
  for (const x of spans) {
    assert.match(String(x.attributes['cloakpipe.fingerprint']), /^sha256:[0-9a-f]{64}$/);
    assert.equal(typeof x.attributes['cloakpipe.decide_ms'], 'number');
    assert.equal(x.status.message, undefined);
  }
  assert.equal(typeof byTool('echo')[0].attributes['cloakpipe.upstream_ms'], 'number');

  // The gate's own stderr lines carry no canary; the upstream's stderr canary appears only in
  // the line the upstream wrote.
  const lines = stderr.split('\n').filter(Boolean);
  for (const line of lines) {
    const hits = all.filter((c) => line.includes(c));
    if (hits.length === 0) continue;
    assert.deepEqual(hits, [C.stderr], `only the upstream's stderr canary may reach stderr: ${line}`);
    assert.equal(line, `upstream stderr: ${C.stderr}`);
  }
  const own = lines.filter((l) => l.startsWith('{')).map((l) => JSON.parse(l));
  const decisionLines = own.filter((o) => o.event === 'decision');
  assert.equal(decisionLines.length, 9, 'one decision line per call');
  assert.ok(decisionLines.some((o) => o.tool_digest === digestJson(C.toolName)));

  // The ledger holds the digests that stand for the canaries.
  const entries = ledgerOf(s.home);
  const decisions = entries.filter((e) => e.kind === 'decision');
  const echoDecision = decisions.find((e) => e.tool === 'echo' && e.outcome === 'allow');
  assert.equal(echoDecision?.args_digest, digestJson({ text: C.arg }));
  const echoResult = entries.find((e) => e.kind === 'result' && e.decision === echoDecision?.seq);
  assert.equal(echoResult?.result_digest, digestJson({ content: [{ type: 'text', text: C.arg }] }));
  assert.ok(decisions.some((e) => e.tool_digest === digestJson(C.toolName) && e.reason === 'undeclared_tool'));
  assert.ok(decisions.some((e) => e.args_digest === digestJson({ text: C.refusedArg }) && e.reason === 'sink_ceiling_exceeded'));
  const label = entries.find((e) => e.kind === 'label' && e.tool === 'read_record');
  assert.equal(label?.digest, digestJson({ content: [{ type: 'text', text: `record R-1: ${C.result}` }] }));
  const rpcDecision = decisions.find((e) => e.tool === 'fail_rpc');
  const rpcResult = entries.find((e) => e.kind === 'result' && e.decision === rpcDecision?.seq);
  assert.equal(rpcResult?.outcome, 'error');
  assert.match(String(rpcResult?.result_digest), /^sha256:[0-9a-f]{64}$/);
  const unknown = entries.find((e) => e.kind === 'result' && e.outcome === 'unknown');
  assert.ok(unknown, 'the malformed reply left an unknown outcome');
});
