// The session label: starts at the context's sensitivity, rises by `returns` and by classify
// rules, never falls; ceilings are a snapshot; the classify scan is bounded and conservative.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { buildManifest } from '../../src/contract/manifest.js';
import { buildContext, NO_CONTEXT } from '../../src/contract/context.js';
import { FlowSession, UNDIGESTIBLE } from '../../src/flow/session.js';
import { FlowError } from '../../src/flow/labels.js';
import { toolAttributes } from '../../src/policy/schema.js';
import { flowAfterReply, flowServerOutput, labelEntry } from '../../src/flow/evidence.js';
import { digestJson } from '../../src/core/digest.js';
import type { JsonValue } from '../../src/core/json.js';

export const MANIFEST = {
  version: 1,
  release: 'flow-test@1',
  labels: ['public', 'internal', 'confidential', 'restricted'],
  tools: {
    lookup_customer: { effect: 'read', returns: 'confidential', accepts: 'restricted', arguments: { id: { type: 'string' } } },
    search_kb: { effect: 'read', returns: 'internal', accepts: 'internal', arguments: {} },
    post_public: { effect: 'read', accepts: 'public', arguments: { text: { type: 'string' } } },
    echo: { effect: 'read', arguments: { text: { type: 'string' } } },
  },
  classify: [
    { label: 'restricted', pattern: '\\b(?:\\d[ -]?){13,16}\\b' },
    { label: 'confidential', pattern: 'CONFIDENTIAL' },
  ],
};

const m = () => buildManifest(structuredClone(MANIFEST));
const ctx = (sensitivity?: string) => buildContext({ task: { id: 'T-1' }, ...(sensitivity ? { sensitivity } : {}) });
const text = (t: string): JsonValue => ({ content: [{ type: 'text', text: t }] });

test('starts at the lowest label without a sensitivity, at the context sensitivity otherwise', () => {
  assert.equal(new FlowSession(m(), NO_CONTEXT).label, 'public');
  assert.equal(new FlowSession(m(), ctx()).label, 'public');
  assert.equal(new FlowSession(m(), ctx('confidential')).label, 'confidential');
});

test('a context sensitivity the manifest does not declare is a start-up error', () => {
  assert.throws(() => new FlowSession(m(), ctx('secret')), FlowError);
});

test('raise by returns: from, to, cause and the digest of the canonical result', () => {
  const s = new FlowSession(m(), ctx());
  const result = text('customer record');
  const r = s.observe('lookup_customer', m().manifest.tools.lookup_customer, result);
  assert.deepEqual(r, { from: 'public', to: 'confidential', cause: 'returns', digest: digestJson(result) });
  assert.equal(s.label, 'confidential');
  // Seeing the same kind of data again does not raise again.
  assert.equal(s.observe('lookup_customer', m().manifest.tools.lookup_customer, result), null);
});

test('raise by classify: a matching string anywhere in the result, keys and numbers included', () => {
  for (const result of [
    text('card 4111 1111 1111 1111 on file'),
    { structuredContent: { deep: [[{ note: 'x' }, 'pan 4111111111111111']] } },
    { ['4111111111111111']: true },
    { n: 4111111111111111 },
  ] as JsonValue[]) {
    const s = new FlowSession(m(), ctx());
      const r = s.observe('echo', m().manifest.tools.echo, result);
    assert.deepEqual(r, { from: 'public', to: 'restricted', cause: 'classify', digest: digestJson(result) }, JSON.stringify(result));
  }
  const s = new FlowSession(m(), ctx());
  assert.equal(s.observe('echo', undefined, text('this is CONFIDENTIAL'))?.to, 'confidential');
  assert.equal(s.observe('echo', undefined, text('nothing here')), null);
});

test('returns and classify together: the higher wins and names the cause', () => {
  const s = new FlowSession(m(), ctx());
  const r = s.observe('search_kb', m().manifest.tools.search_kb, text('CONFIDENTIAL memo'));
  assert.equal(r?.to, 'confidential');
  assert.equal(r?.cause, 'classify');
  const s2 = new FlowSession(m(), ctx());
  const r2 = s2.observe('lookup_customer', m().manifest.tools.lookup_customer, text('CONFIDENTIAL memo'));
  assert.equal(r2?.cause, 'returns'); // classify found nothing above what returns gave
});

test('never lowers: any sequence of observations and context re-reads is monotone', () => {
  const labels = MANIFEST.labels;
  const rank = (l: string) => labels.indexOf(l);
  const tools = Object.keys(MANIFEST.tools);
  const step = fc.oneof(
    fc.record({ kind: fc.constant('tool' as const), tool: fc.constantFrom(...tools), body: fc.constantFrom('plain', 'CONFIDENTIAL', '4111111111111111') }),
    fc.record({ kind: fc.constant('ctx' as const), label: fc.constantFrom(...labels, undefined) }),
  );
  fc.assert(
    fc.property(fc.constantFrom(...labels), fc.array(step, { maxLength: 20 }), (start, steps) => {
      const man = m();
      const s = new FlowSession(man, ctx(start));
      let prev = rank(s.label);
      for (const st of steps) {
        const r = st.kind === 'tool' ? s.observe(st.tool, man.manifest.tools[st.tool], text(st.body)) : s.observeContext(ctx(st.label));
        const now = rank(s.label);
        assert.ok(now >= prev);
        if (r) assert.ok(rank(r.to) > rank(r.from) && r.to === s.label);
        else assert.equal(now, prev);
        prev = now;
      }
    }),
  );
});

test('context re-read: a higher sensitivity raises (cause context, digest of the context); a lower one does not lower', () => {
  const s = new FlowSession(m(), ctx('internal'));
  const up = ctx('confidential');
  assert.deepEqual(s.observeContext(up), { from: 'internal', to: 'confidential', cause: 'context', digest: up.digest });
  assert.equal(s.observeContext(ctx('public')), null);
  assert.equal(s.observeContext(NO_CONTEXT), null);
  assert.equal(s.label, 'confidential');
  assert.throws(() => s.observeContext(ctx('bogus')), FlowError);
  assert.equal(s.label, 'confidential');
});

test('effectiveLabel is the max of session and context, and does not change the session', () => {
  const s = new FlowSession(m(), ctx());
  assert.equal(s.effectiveLabel(ctx('restricted')), 'restricted');
  assert.equal(s.label, 'public');
});

test('ceilings: accepts, else the lowest label; a snapshot taken at start', () => {
  const man = m();
  const s = new FlowSession(man, ctx());
  assert.equal(s.ceilingOf('lookup_customer'), 'restricted');
  assert.equal(s.ceilingOf('post_public'), 'public');
  assert.equal(s.ceilingOf('echo'), 'public'); // no accepts: lowest
  assert.equal(s.ceilingOf('not_a_tool'), 'public');
  assert.equal(s.ceilingOf('__proto__'), 'public');
  // Mutating the loaded manifest afterwards does not move a live session's ceilings.
  man.manifest.tools.post_public.accepts = 'restricted';
  man.manifest.labels.reverse();
  assert.equal(s.ceilingOf('post_public'), 'public');
  assert.ok(s.order.above('restricted', 'public'));
});

test('the classify scan is bounded: past the limit the result counts as the highest rule label', () => {
  const s = new FlowSession(m(), ctx(), { scanLimit: 1000 });
  const small = text('x'.repeat(900));
  assert.equal(s.observe('echo', undefined, small), null);
  const big = text('x'.repeat(600) + ' '.repeat(600));
  const r = s.observe('echo', undefined, { a: 'x'.repeat(600), b: 'y'.repeat(600) });
  assert.equal(r?.to, 'restricted');
  assert.equal(r?.cause, 'classify');
  void big;
});

test('the scan stops early when no rule can raise further, and runs in linear time on adversarial input', () => {
  const s = new FlowSession(m(), ctx('restricted'), { scanLimit: 10 });
  // Already at the highest rule label: a huge result is not even scanned (no conservative raise).
  assert.equal(s.observe('echo', undefined, text('x'.repeat(100_000))), null);
  const s2 = new FlowSession(m(), ctx());
  // A classic backtracking trap for (\d[ -]?){13,16}: long digit-space runs without a boundary.
  const trap = '1 '.repeat(200_000) + 'x';
  const r = s2.observe('echo', undefined, text(trap));
  assert.equal(r?.to, 'restricted');
});

test('deeply nested results do not exhaust the stack', () => {
  let v: JsonValue = 'CONFIDENTIAL';
  for (let i = 0; i < 100_000; i++) v = [v];
  const s = new FlowSession(m(), ctx());
  const r = s.observe('echo', undefined, v);
  assert.equal(r?.to, 'confidential');
  assert.equal(r?.digest, UNDIGESTIBLE); // too deep for the canonical form: the rise still happens
  assert.equal(s.label, 'confidential');
});

test('label entries: names and digests only; after a reply an error counts as output', () => {
  const man = m();
  const s = new FlowSession(man, ctx());
  assert.equal(flowAfterReply(s, 'echo', man.manifest.tools.echo, { result: text('plain') }), null);
  const err = { code: -32000, message: 'card 4111111111111111 declined' };
  const e = flowAfterReply(s, 'echo', man.manifest.tools.echo, { error: err });
  assert.deepEqual(e, { kind: 'label', from: 'public', to: 'restricted', cause: 'classify', tool: 'echo', digest: digestJson(err) });
  assert.ok(!JSON.stringify(e).includes('4111'));
  assert.deepEqual(labelEntry({ from: 'a', to: 'b', cause: 'returns', digest: digestJson(1) }, 't'), {
    kind: 'label', from: 'a', to: 'b', cause: 'returns', tool: 't', digest: digestJson(1),
  });
});

test('unattributed server output: only classify rules apply, and it never lowers', () => {
  const man = m();
  const s = new FlowSession(man, ctx('internal'));
  assert.equal(flowServerOutput(s, { contents: [{ text: 'plain' }] }), null);
  assert.deepEqual(flowServerOutput(s, 'CONFIDENTIAL memo'), { kind: 'label', from: 'internal', to: 'confidential', cause: 'classify', digest: digestJson('CONFIDENTIAL memo') });
  const s2 = new FlowSession(man, ctx());
  const line = '{"broken": "pan 4111111111111111';
  assert.deepEqual(flowServerOutput(s2, line), { kind: 'label', from: 'public', to: 'restricted', cause: 'classify', digest: digestJson(line) });
  assert.equal(flowServerOutput(s2, 'CONFIDENTIAL'), null);
  assert.equal(s2.label, 'restricted');
});

test("Cedar is told each tool's ceiling as the flow check enforces it, declared or not (ADR 063)", () => {
  const loaded = m();
  const flow = new FlowSession(loaded, NO_CONTEXT);
  for (const [name, decl] of Object.entries(loaded.manifest.tools)) assert.equal(toolAttributes(loaded.manifest, decl).accepts, flow.ceilingOf(name), name);
  assert.equal(flow.ceilingOf('echo'), 'public');
});
