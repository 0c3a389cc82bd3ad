// sink_ceiling_exceeded: before Cedar and regardless of it; undeclared ceilings are the lowest.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { buildManifest } from '../../src/contract/manifest.js';
import { buildContext } from '../../src/contract/context.js';
import { FlowSession } from '../../src/flow/session.js';
import { decide, CHECKS } from '../../src/gate/decide.js';
import type { GateServices, PolicyRequest, PolicyService } from '../../src/gate/services.js';
import { GateSession } from '../../src/gate/session.js';
import type { TaskContext } from '../../src/contract/context.js';
import { MANIFEST } from './session.test.js';

const m = buildManifest(structuredClone(MANIFEST));
const ctx = (sensitivity?: string) => buildContext({ task: { id: 'T-1' }, ...(sensitivity ? { sensitivity } : {}) });

/** What decide() is given for one session of `flow`, with a policy that permits (or not) and
 *  records what Cedar was asked. */
function services(flow: FlowSession, allow = true) {
  const seen: PolicyRequest[] = [];
  const policy: PolicyService = { digest: `sha256:${'0'.repeat(64)}`, evaluate: (req) => (seen.push(req), { allow, policyIds: allow ? ['permit-all'] : [], omitted: [] }) };
  const s: GateServices = {
    agent: 'agent',
    mode: 'enforce',
    rates: { counts: () => ({ calls: { minute: 0, hour: 0, day: 0 }, callsAll: { minute: 0, hour: 0, day: 0 } }), record: () => undefined },
  };
  const session = new GateSession(flow, null);
  const input = (context: TaskContext, manifest = m) => ({ manifest, policy, context, services: s, session, now: 0 });
  return { s, seen, input };
}

const call = (tool: string, args = {}) => ({ tool, arguments: args, meta: {}, taskId: 'T-1' });

test('the flow check runs before policy', () => {
  const names = CHECKS.map((c) => c.name);
  assert.ok(names.indexOf('flow') >= 0 && names.indexOf('flow') < names.indexOf('policy'));
});

test('after a confidential read, a public sink is refused whatever Cedar says; a restricted sink is allowed', () => {
  const flow = new FlowSession(m, ctx());
  flow.observe('lookup_customer', m.manifest.tools.lookup_customer, { content: [] });
  const { seen, input } = services(flow, true);
  const context = ctx();
  const refused = decide(call('post_public', { text: 'hi' }), input(context));
  assert.equal(refused.verdict.ok, false);
  assert.equal(!refused.verdict.ok && refused.verdict.code, 'sink_ceiling_exceeded');
  assert.equal(seen.length, 0, 'Cedar was not consulted');
  assert.equal(refused.notes.fields.session_label, 'confidential');
  assert.equal(refused.notes.fields.ceiling, 'public');
  assert.ok(!JSON.stringify(refused.verdict).includes('hi'));
  const ok = decide(call('lookup_customer', { id: 'C1' }), input(context));
  assert.equal(ok.verdict.ok, true);
  assert.equal(seen.length, 1);
  assert.equal(seen[0].sessionLabel, 'confidential');
});

test('a tool without accepts has the lowest ceiling', () => {
  const flow = new FlowSession(m, ctx('internal'));
  const { input } = services(flow);
  const d = decide(call('echo', { text: 'x' }), input(ctx('internal')));
  assert.equal(!d.verdict.ok && d.verdict.code, 'sink_ceiling_exceeded');
  const fresh = new FlowSession(m, ctx());
  const d2 = decide(call('echo', { text: 'x' }), services(fresh).input(ctx(), m));
  assert.equal(d2.verdict.ok, true);
});

test('the session uses the higher of its label and the re-read context', () => {
  const flow = new FlowSession(m, ctx());
  const { input } = services(flow);
  // Context raised since start: refused, and the session follows it up.
  const d = decide(call('search_kb'), input(ctx('confidential')));
  assert.equal(!d.verdict.ok && d.verdict.code, 'sink_ceiling_exceeded');
  assert.equal(flow.label, 'confidential');
});

test('a context naming an undeclared label fails closed', () => {
  const flow = new FlowSession(m, ctx());
  const d = decide(call('post_public'), services(flow).input(ctx('bogus'), m));
  assert.equal(!d.verdict.ok && d.verdict.code, 'fail_closed');
});

test('two sessions of one gate: one session\'s label never reaches another', () => {
  const a = new FlowSession(m, ctx());
  const b = new FlowSession(m, ctx());
  a.observe('lookup_customer', m.manifest.tools.lookup_customer, { content: [] });
  assert.equal(!decide(call('post_public'), services(a).input(ctx())).verdict.ok, true);
  assert.equal(decide(call('post_public'), services(b).input(ctx())).verdict.ok, true);
});

test('ceilings are fixed for the session: a manifest edited after start does not widen a sink', () => {
  const man = buildManifest(structuredClone(MANIFEST));
  const flow = new FlowSession(man, ctx('confidential'));
  man.manifest.tools.post_public.accepts = 'restricted';
  const d = decide(call('post_public'), services(flow).input(ctx('confidential'), man));
  assert.equal(!d.verdict.ok && d.verdict.code, 'sink_ceiling_exceeded');
});

test('a context raise seen while deciding persists: the context going back down does not lower the session', () => {
  const flow = new FlowSession(m, ctx());
  const { seen, input } = services(flow);
  const up = ctx('internal');
  const d = decide(call('search_kb'), input(up));
  assert.equal(d.verdict.ok, true);
  assert.deepEqual(d.notes.fields.label_raise, { from: 'public', to: 'internal', cause: 'context', digest: up.digest });
  assert.equal(seen[0].sessionLabel, 'internal', 'Cedar sees the label in force');
  assert.equal(flow.label, 'internal');
  const d2 = decide(call('post_public'), input(ctx('public')));
  assert.equal(!d2.verdict.ok && d2.verdict.code, 'sink_ceiling_exceeded');
  assert.equal(d2.notes.fields.label_raise, undefined);
});
