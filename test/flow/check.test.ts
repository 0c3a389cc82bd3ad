// sink_ceiling_exceeded: before Cedar and regardless of it; undeclared ceilings are the lowest.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { buildManifest } from '../../src/contract/manifest.js';
import { buildContext } from '../../src/contract/context.js';
import { FlowSession } from '../../src/flow/session.js';
import { decide, CHECKS } from '../../src/gate/decide.js';
import type { GateServices, PolicyRequest } from '../../src/gate/services.js';
import { MANIFEST } from './session.test.js';

const m = buildManifest(structuredClone(MANIFEST));
const ctx = (sensitivity?: string) => buildContext({ task: { id: 'T-1' }, ...(sensitivity ? { sensitivity } : {}) });

function services(flow?: FlowSession, allow = true) {
  const seen: PolicyRequest[] = [];
  const s: GateServices = {
    agent: 'agent',
    mode: 'enforce',
    policy: { digest: `sha256:${'0'.repeat(64)}`, evaluate: (req) => (seen.push(req), { allow, policyIds: allow ? ['permit-all'] : [], omitted: [] }) },
    rates: { counts: () => ({ calls: { minute: 0, hour: 0, day: 0 }, callsAll: { minute: 0, hour: 0, day: 0 } }), record: () => undefined },
    ...(flow ? { flow } : {}),
  };
  return { s, seen };
}

const call = (tool: string, args = {}) => ({ tool, arguments: args, meta: {}, taskId: 'T-1' });

test('the flow check runs before policy', () => {
  const names = CHECKS.map((c) => c.name);
  assert.ok(names.indexOf('flow') >= 0 && names.indexOf('flow') < names.indexOf('policy'));
});

test('after a confidential read, a public sink is refused whatever Cedar says; a restricted sink is allowed', () => {
  const flow = new FlowSession(m, ctx());
  flow.observe('lookup_customer', m.manifest.tools.lookup_customer, { content: [] });
  const { s, seen } = services(flow, true);
  const context = ctx();
  const refused = decide(call('post_public', { text: 'hi' }), { manifest: m, context, services: s, sessionLabel: flow.label, now: 0 });
  assert.equal(refused.verdict.ok, false);
  assert.equal(!refused.verdict.ok && refused.verdict.code, 'sink_ceiling_exceeded');
  assert.equal(seen.length, 0, 'Cedar was not consulted');
  assert.equal(refused.notes.fields.session_label, 'confidential');
  assert.equal(refused.notes.fields.ceiling, 'public');
  assert.ok(!JSON.stringify(refused.verdict).includes('hi'));
  const ok = decide(call('lookup_customer', { id: 'C1' }), { manifest: m, context, services: s, sessionLabel: flow.label, now: 0 });
  assert.equal(ok.verdict.ok, true);
  assert.equal(seen.length, 1);
  assert.equal(seen[0].sessionLabel, 'confidential');
});

test('a tool without accepts has the lowest ceiling', () => {
  const flow = new FlowSession(m, ctx('internal'));
  const { s } = services(flow);
  const d = decide(call('echo', { text: 'x' }), { manifest: m, context: ctx('internal'), services: s, sessionLabel: flow.label, now: 0 });
  assert.equal(!d.verdict.ok && d.verdict.code, 'sink_ceiling_exceeded');
  const fresh = new FlowSession(m, ctx());
  const d2 = decide(call('echo', { text: 'x' }), { manifest: m, context: ctx(), services: services(fresh).s, sessionLabel: fresh.label, now: 0 });
  assert.equal(d2.verdict.ok, true);
});

test('the session uses the higher of its label, the gate-supplied label and the re-read context', () => {
  const flow = new FlowSession(m, ctx());
  const { s } = services(flow);
  // Context raised since start, the gate did not tell the session: still refused.
  let d = decide(call('search_kb'), { manifest: m, context: ctx('confidential'), services: s, sessionLabel: 'public', now: 0 });
  assert.equal(!d.verdict.ok && d.verdict.code, 'sink_ceiling_exceeded');
  // The gate's label is higher than the session's: still refused.
  d = decide(call('search_kb'), { manifest: m, context: ctx(), services: s, sessionLabel: 'restricted', now: 0 });
  assert.equal(!d.verdict.ok && d.verdict.code, 'sink_ceiling_exceeded');
});

test('without a wired session the check still enforces from the facts; an unknown label fails closed', () => {
  const { s } = services(undefined);
  let d = decide(call('post_public'), { manifest: m, context: ctx(), services: s, sessionLabel: 'internal', now: 0 });
  assert.equal(!d.verdict.ok && d.verdict.code, 'sink_ceiling_exceeded');
  d = decide(call('post_public'), { manifest: m, context: ctx(), services: s, sessionLabel: 'public', now: 0 });
  assert.equal(d.verdict.ok, true);
  d = decide(call('post_public'), { manifest: m, context: ctx(), services: s, sessionLabel: 'bogus', now: 0 });
  assert.equal(!d.verdict.ok && d.verdict.code, 'fail_closed');
  const flow = new FlowSession(m, ctx());
  d = decide(call('post_public'), { manifest: m, context: ctx('bogus'), services: services(flow).s, sessionLabel: 'public', now: 0 });
  assert.equal(!d.verdict.ok && d.verdict.code, 'fail_closed');
});

test('ceilings are fixed for the session: a manifest edited after start does not widen a sink', () => {
  const man = buildManifest(structuredClone(MANIFEST));
  const flow = new FlowSession(man, ctx('confidential'));
  man.manifest.tools.post_public.accepts = 'restricted';
  const d = decide(call('post_public'), { manifest: man, context: ctx('confidential'), services: services(flow).s, sessionLabel: flow.label, now: 0 });
  assert.equal(!d.verdict.ok && d.verdict.code, 'sink_ceiling_exceeded');
});

test('a context raise seen while deciding persists: the context going back down does not lower the session', () => {
  const flow = new FlowSession(m, ctx());
  const { s, seen } = services(flow);
  const up = ctx('internal');
  const d = decide(call('search_kb'), { manifest: m, context: up, services: s, sessionLabel: flow.label, now: 0 });
  assert.equal(d.verdict.ok, true);
  assert.deepEqual(d.notes.fields.label_raise, { from: 'public', to: 'internal', cause: 'context', digest: up.digest });
  assert.equal(seen[0].sessionLabel, 'internal', 'Cedar sees the label in force');
  assert.equal(flow.label, 'internal');
  const d2 = decide(call('post_public'), { manifest: m, context: ctx('public'), services: s, sessionLabel: 'public', now: 0 });
  assert.equal(!d2.verdict.ok && d2.verdict.code, 'sink_ceiling_exceeded');
  assert.equal(d2.notes.fields.label_raise, undefined);
});
