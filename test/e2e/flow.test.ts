// Information flow through the real gate binary (product.md section 6): the session label
// rises with what the agent reads, by a tool's `returns` label and by classify rules, never
// falls, and sinks whose ceiling is below it are refused whatever Cedar says. The flow server's
// own record is the witness of what reached a tool; the ledger holds the label facts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { cloakpipe, PERMIT_ALL } from '../helpers/cli.js';
import { call } from '../helpers/recording-gate.js';
import { ledgerOf, summary } from '../helpers/support-desk.js';
import { flowSetup, records, rewriteContext, startFlowGate } from '../helpers/flow-gate.js';
import { gateArgs } from '../helpers/gate.js';
import { helperScript } from '../helpers/cli.js';
import { digestJson } from '../../src/core/digest.js';

const arrivedTexts = (s: ReturnType<typeof flowSetup>, tool: string) => records(s).filter((r) => r.tool === tool).map((r) => r.arguments.text);

test('after a confidential read a public sink is refused, a confidential sink is not; permit-all Cedar changes nothing', async () => {
  const s = flowSetup({ policy: PERMIT_ALL });
  const g = await startFlowGate(s);
  try {
    assert.equal(summary(await call(g, 'post_public', { text: 'before' })), 'ok');
    const read = await call(g, 'read_record', { id: 'R-1' });
    assert.equal(summary(read), 'ok');
    const refused = await call(g, 'post_public', { text: 'after' });
    assert.ok(!refused.ok);
    assert.equal(refused.reason, 'sink_ceiling_exceeded');
    assert.equal(refused.detail, "session label confidential is above the tool's ceiling public");
    assert.equal((await call(g, 'post_internal', { text: 'after' })).ok ? 'ok' : 'refused', 'refused');
    assert.equal(summary(await call(g, 'post_confidential', { text: 'after' })), 'ok');
    assert.equal(summary(await call(g, 'read_record', { id: 'R-2' })), 'ok', 'a restricted-ceiling tool is still open');
  } finally {
    await g.close();
  }
  assert.deepEqual(arrivedTexts(s, 'post_public'), ['before']);
  assert.deepEqual(arrivedTexts(s, 'post_internal'), []);
  assert.deepEqual(arrivedTexts(s, 'post_confidential'), ['after']);

  const entries = ledgerOf(s.home);
  const labels = entries.filter((e) => e.kind === 'label');
  assert.equal(labels.length, 1, 'one rise; the second read does not rise again');
  const [label] = labels;
  assert.deepEqual({ from: label.from, to: label.to, cause: label.cause, tool: label.tool }, { from: 'public', to: 'confidential', cause: 'returns', tool: 'read_record' });
  // The rise names the digest of what raised it: the same digest as the result entry.
  const result = entries.find((e) => e.kind === 'result' && e.seq < label.seq && e.seq === label.seq - 1);
  assert.equal(label.digest, result?.result_digest);
  assert.equal(label.digest, digestJson({ content: [{ type: 'text', text: 'record R-1: customer data' }] }));
  const decisions = entries.filter((e) => e.kind === 'decision');
  assert.deepEqual(
    decisions.map((d) => [d.tool, d.outcome, d.reason ?? null, d.session_label]),
    [
      ['post_public', 'allow', null, 'public'],
      ['read_record', 'allow', null, 'public'],
      ['post_public', 'refuse', 'sink_ceiling_exceeded', 'confidential'],
      ['post_internal', 'refuse', 'sink_ceiling_exceeded', 'confidential'],
      ['post_confidential', 'allow', null, 'confidential'],
      ['read_record', 'allow', null, 'confidential'],
    ],
  );
  const r = cloakpipe(['verify', '--home', s.home]);
  if (r.status !== null && !/not available/.test(r.stderr)) assert.equal(r.status, 0, r.stdout + r.stderr);
});

test('a classify rule raises the label from a result, and from an error the tool sent', async () => {
  const s = flowSetup();
  const g = await startFlowGate(s, { env: { FLOW_ERROR_CANARY: 'internal use only' } });
  try {
    // The error message matches the `internal` rule: an error is output the agent sees.
    const failed = await call(g, 'fail_rpc', { text: 'x' });
    assert.ok(!failed.ok);
    assert.match(failed.message, /internal use only/);
    assert.equal((await call(g, 'post_public', { text: 'p' })).ok ? 'ok' : 'refused', 'refused');
    assert.equal(summary(await call(g, 'post_internal', { text: 'i' })), 'ok');
    // The echo's result holds an account number: the `restricted` rule matches.
    const echoed = await call(g, 'echo', { text: 'see ACCT-12345678 for details' });
    assert.equal(summary(echoed), 'ok');
    const r = await call(g, 'post_confidential', { text: 'c' });
    assert.equal(r.ok ? 'ok' : r.reason, 'sink_ceiling_exceeded');
    assert.equal(summary(await call(g, 'read_record', { id: 'R-9' })), 'ok');
  } finally {
    await g.close();
  }
  assert.deepEqual(arrivedTexts(s, 'post_confidential'), []);
  const labels = ledgerOf(s.home).filter((e) => e.kind === 'label');
  assert.deepEqual(
    labels.map((l) => [l.from, l.to, l.cause, l.tool]),
    [
      ['public', 'internal', 'classify', 'fail_rpc'],
      ['internal', 'restricted', 'classify', 'echo'],
    ],
  );
  assert.equal(labels[1].digest, digestJson({ content: [{ type: 'text', text: 'see ACCT-12345678 for details' }] }));
  for (const l of labels) assert.ok(!JSON.stringify(l).includes('ACCT') && !JSON.stringify(l).includes('use only'));
});

test('the session starts at the context sensitivity; a re-read raises it; lowering the context does not lower it', async () => {
  const s = flowSetup({ context: { task: { id: 'T-ctx' }, sensitivity: 'internal' } });
  const g = await startFlowGate(s);
  try {
    assert.equal((await call(g, 'post_public', { text: 'a' })).ok ? 'ok' : 'refused', 'refused');
    assert.equal(summary(await call(g, 'post_internal', { text: 'b' })), 'ok');
    rewriteContext(s, { task: { id: 'T-ctx' }, sensitivity: 'confidential' });
    assert.equal((await call(g, 'post_internal', { text: 'c' })).ok ? 'ok' : 'refused', 'refused');
    rewriteContext(s, { task: { id: 'T-ctx' }, sensitivity: 'public' });
    assert.equal((await call(g, 'post_internal', { text: 'd' })).ok ? 'ok' : 'refused', 'refused', 'never lowered');
    assert.equal(summary(await call(g, 'post_confidential', { text: 'e' })), 'ok');
    rewriteContext(s, { task: { id: 'T-ctx' }, sensitivity: 'top-secret' });
    const bad = await call(g, 'post_confidential', { text: 'f' });
    assert.equal(bad.ok ? 'ok' : bad.reason, 'fail_closed', 'an undeclared sensitivity on re-read fails closed');
  } finally {
    await g.close();
  }
  assert.deepEqual(arrivedTexts(s, 'post_internal'), ['b']);
  assert.deepEqual(arrivedTexts(s, 'post_confidential'), ['e']);
  const decisions = ledgerOf(s.home).filter((e) => e.kind === 'decision');
  const raised = decisions.filter((d) => d.label_raise);
  assert.equal(raised.length, 1);
  assert.deepEqual({ ...raised[0].label_raise, digest: undefined }, { from: 'internal', to: 'confidential', cause: 'context', digest: undefined });
  assert.match(raised[0].label_raise.digest, /^sha256:[0-9a-f]{64}$/);
});

test('a context sensitivity the manifest does not declare stops start-up before the upstream is spawned', () => {
  const s = flowSetup({ context: { task: { id: 'T-x' }, sensitivity: 'secret' } });
  const r = cloakpipe(gateArgs({ home: s.home, manifest: s.manifest, policy: s.policy, context: s.context, upstream: [process.execPath, helperScript('upstream.js')] }).slice(1), {
    input: '',
    env: { ...process.env, UPSTREAM_TOOLS: 'flow', RECORD_FILE: s.record },
  });
  assert.equal(r.status, 2, r.stderr);
  assert.match(r.stderr, /sensitivity/);
  assert.ok(!existsSync(s.record));
});

test('shadow mode: a sink above its ceiling is forwarded and recorded would_refuse sink_ceiling_exceeded', async () => {
  const s = flowSetup();
  const g = await startFlowGate(s, { flags: ['--mode', 'shadow'] });
  try {
    assert.equal(summary(await call(g, 'read_record', { id: 'R-1' })), 'ok');
    assert.equal(summary(await call(g, 'post_public', { text: 'shadowed' })), 'ok');
  } finally {
    await g.close();
  }
  assert.deepEqual(arrivedTexts(s, 'post_public'), ['shadowed']);
  const d = ledgerOf(s.home).filter((e) => e.kind === 'decision' && e.tool === 'post_public');
  assert.equal(d.length, 1);
  assert.equal(d[0].outcome, 'would_refuse');
  assert.equal(d[0].reason, 'sink_ceiling_exceeded');
  assert.equal(d[0].session_label, 'confidential');
});

test('a replayed result raises the label like a fresh one, in a new session on the same home', async () => {
  const s = flowSetup();
  const g1 = await startFlowGate(s);
  try {
    assert.equal(summary(await call(g1, 'fetch_report', { key: 'k-1' })), 'ok');
  } finally {
    await g1.close();
  }
  const g2 = await startFlowGate(s);
  try {
    assert.equal(summary(await call(g2, 'post_public', { text: 'fresh session' })), 'ok');
    const again = await call(g2, 'fetch_report', { key: 'k-1' });
    assert.equal(summary(again), 'ok');
    assert.match(again.ok ? again.text : '', /quarterly figures/);
    const r = await call(g2, 'post_public', { text: 'after replay' });
    assert.equal(r.ok ? 'ok' : r.reason, 'sink_ceiling_exceeded');
  } finally {
    await g2.close();
  }
  assert.equal(records(s).filter((r) => r.tool === 'fetch_report').length, 1, 'the second answer was a replay');
  assert.deepEqual(arrivedTexts(s, 'post_public'), ['fresh session']);
  const entries = ledgerOf(s.home);
  const replay = entries.find((e) => e.kind === 'decision' && e.outcome === 'replay');
  assert.ok(replay);
  const labels = entries.filter((e) => e.kind === 'label');
  assert.equal(labels.length, 2, 'one rise per session');
  assert.ok(labels[1].seq > replay.seq);
  assert.deepEqual([labels[1].from, labels[1].to, labels[1].cause, labels[1].tool], ['public', 'confidential', 'returns', 'fetch_report']);
});

// A line the upstream sends that does not parse is dropped (product.md 7a): the host never sees
// it, so it raises nothing; a resource read that reaches the host does.
test('server output outside a gated result raises by classify; an unparseable line never reaches the host and raises nothing', async () => {
  const s = flowSetup();
  const g = await startFlowGate(s, { flags: ['--call-timeout', '2s'], env: { FLOW_RESOURCE_TEXT: 'ledger note: internal use only', FLOW_MALFORMED_CANARY: 'acct ACCT-11112222' } });
  try {
    assert.equal(summary(await call(g, 'post_public', { text: 'first' })), 'ok');
    const res = await g.client.readResource({ uri: 'note://1' });
    assert.match(JSON.stringify(res), /internal use only/);
    assert.equal((await call(g, 'post_public', { text: 'second' })).ok ? 'ok' : 'refused', 'refused');
    assert.equal(summary(await call(g, 'post_confidential', { text: 'third' })), 'ok');
    const broken = await call(g, 'malformed', { text: 'x' });
    assert.equal(broken.ok ? 'ok' : broken.reason, 'outcome_unknown');
    const r = await call(g, 'post_confidential', { text: 'fourth' });
    assert.equal(r.ok ? 'ok' : r.reason, 'ok');
    assert.ok(!g.hostErrors.some((e) => /JSON/.test(e)), 'the broken line did not reach the host');
  } finally {
    await g.close();
  }
  assert.deepEqual(arrivedTexts(s, 'post_public'), ['first']);
  assert.deepEqual(arrivedTexts(s, 'post_confidential'), ['third', 'fourth']);
  const labels = ledgerOf(s.home).filter((e) => e.kind === 'label');
  assert.deepEqual(
    labels.map((l) => [l.from, l.to, l.cause, l.tool ?? null]),
    [
      ['public', 'internal', 'classify', null],
    ],
  );
  assert.ok(!JSON.stringify(labels).includes('ACCT') && !JSON.stringify(labels).includes('use only'));
});
