import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkOperations } from '../../src/gate/checks/operations.js';
import { Operations } from '../../src/operations/operations.js';
import { operationDigest } from '../../src/operations/operation-id.js';
import { gateLikeStore } from './helpers.js';
import { applyAllow, applyFailure, applyReply, factsFor, READ } from './facts.js';

function setup(mode: 'enforce' | 'shadow' = 'enforce') {
  const { store } = gateLikeStore();
  const operations = new Operations(store.operations);
  return { operations, services: { operations, mode } };
}
const OK = { result: { content: [{ type: 'text', text: 'sent' }] } };
const args = (key?: string) => ({ to: 'a@example.com', body: 'hello', ...(key ? { idempotency_key: key } : {}) });

test('read tools are not operations', () => {
  const { services } = setup();
  const f = factsFor({ tool: READ, name: 'lookup', args: { q: 'x' }, services });
  assert.ok(checkOperations(f).ok);
  assert.equal(f.notes.onAllow.length, 0);
});

test('the agent runs the tool (LLM door): no operation is begun or replayed, and the entry says so', () => {
  const { services, operations } = setup();
  const done = factsFor({ args: args('k-agent'), services });
  assert.ok(checkOperations(done).ok);
  applyAllow(done);
  applyReply(done, OK);
  assert.equal(operations.get('k-agent')!.state, 'succeeded');
  // The same call from a session whose agent runs its tools: not replayed, nothing written.
  const f = factsFor({ args: args('k-agent'), services, scope: { execution: 'agent' } });
  assert.ok(checkOperations(f).ok);
  assert.equal(f.notes.replay, undefined);
  assert.equal(f.notes.fields.operation_state, 'not_applicable');
  assert.equal(f.notes.onAllow.length + f.notes.afterReply.length, 0);
});

test('a new operation: pending on allow, settled by the reply, replayed afterwards', () => {
  const { services, operations } = setup();
  const f = factsFor({ args: args('k-1'), services });
  assert.ok(checkOperations(f).ok);
  assert.equal(f.notes.fields.operation, operationDigest('k-1'));
  assert.equal(f.notes.fields.operation_id_source, 'argument');
  assert.equal(f.notes.fields.operation_state, 'new');
  assert.equal(operations.get('k-1'), null, 'nothing written before the decision is applied');
  applyAllow(f);
  assert.equal(f.notes.fields.operation_state, 'pending', 'the entry, appended after the effects, says pending');
  assert.equal(operations.get('k-1')!.state, 'pending');
  // While in flight, the same call is refused.
  const g = factsFor({ args: args('k-1'), services });
  const gv = checkOperations(g);
  assert.equal(!gv.ok && gv.code, 'reconcile_before_retry');
  applyReply(f, OK);
  assert.equal(operations.get('k-1')!.state, 'succeeded');
  const h = factsFor({ args: args('k-1'), services });
  assert.ok(checkOperations(h).ok);
  assert.deepEqual(h.notes.replay, OK.result);
  assert.equal(h.notes.onAllow.length, 0);
  assert.equal(h.notes.fields.operation_state, 'succeeded');
});

test('same id, other call: operation_conflict', () => {
  const { services } = setup();
  const f = factsFor({ args: args('k-1'), services });
  checkOperations(f);
  applyAllow(f);
  const g = factsFor({ args: { ...args('k-1'), body: 'other' }, services });
  const v = checkOperations(g);
  assert.equal(!v.ok && v.code, 'operation_conflict');
  assert.doesNotMatch(JSON.stringify(g.notes.fields) + (!v.ok ? v.detail : ''), /k-1|other|example/);
  // The same id in another task is another call too.
  const h = factsFor({ args: args('k-1'), taskId: 'T-2', services });
  assert.equal(!checkOperations(h).ok, true);
});

test('failed → a new attempt; unknown → reconcile_before_retry', () => {
  const { services, operations } = setup();
  const f = factsFor({ args: args('k'), services });
  checkOperations(f);
  applyAllow(f);
  applyReply(f, { error: { code: -1, message: 'no' } }, Date.UTC(2030, 0, 1));
  assert.equal(operations.get('k')!.state, 'failed');
  assert.equal(operations.get('k')!.updated_at, '2030-01-01T00:00:00.000Z', "settled at the gate's clock");
  const g = factsFor({ args: args('k'), services });
  assert.ok(checkOperations(g).ok);
  assert.equal(g.notes.fields.operation_attempt, 2);
  applyAllow(g);
  assert.equal(operations.get('k')!.attempts, 2);
  applyFailure(g, 'timeout', Date.UTC(2031, 0, 1));
  assert.equal(operations.get('k')!.state, 'unknown');
  assert.equal(operations.get('k')!.updated_at, '2031-01-01T00:00:00.000Z');
  const h = factsFor({ args: args('k'), services });
  const v = checkOperations(h);
  assert.equal(!v.ok && v.code, 'reconcile_before_retry');
  assert.match(!v.ok ? v.detail : '', /unknown/);
});

test('operation id: argument, else _meta, else the fingerprint; bounded', () => {
  const { services } = setup();
  const m = factsFor({ args: args(), meta: { 'cloakpipe/operation_id': 'meta-1' }, services });
  assert.ok(checkOperations(m).ok);
  assert.equal(m.notes.fields.operation_id_source, 'meta');
  assert.equal(m.notes.fields.operation, operationDigest('meta-1'));
  const p = factsFor({ args: args(), services });
  assert.ok(checkOperations(p).ok);
  assert.equal(p.notes.fields.operation_id_source, 'fingerprint');
  assert.equal(p.notes.fields.operation, operationDigest(p.fingerprint));
  for (const bad of ['', 'x'.repeat(257), { a: 1 }, true]) {
    const b = factsFor({ args: args(), meta: { 'cloakpipe/operation_id': bad as never }, services });
    const v = checkOperations(b);
    assert.equal(!v.ok && v.code, 'argument_invalid');
  }
  const n = factsFor({ args: { ...args(), idempotency_key: 7 as never }, services });
  assert.ok(checkOperations(n).ok, 'an integer id is accepted');
});

test('no operations store: fail_closed', () => {
  const v = checkOperations(factsFor({ services: {} }));
  assert.equal(!v.ok && v.code, 'fail_closed');
});

test('shadow mode: a succeeded operation is not replayed, only noted', () => {
  const { services } = setup('shadow');
  const f = factsFor({ args: args('s'), services });
  checkOperations(f);
  applyAllow(f);
  applyReply(f, OK);
  const g = factsFor({ args: args('s'), services });
  assert.ok(checkOperations(g).ok);
  assert.equal(g.notes.replay, undefined);
  assert.equal(g.notes.fields.operation_shadow, 'would_replay');
});

test('a reply settles only the attempt its own decision began', () => {
  const { services, operations } = setup('shadow');
  // Decided but never applied (a later check would-refused; shadow forwarded it anyway).
  const a = factsFor({ args: args('x'), services });
  assert.ok(checkOperations(a).ok);
  // Another call begins the operation for real.
  const b = factsFor({ args: args('x'), services });
  assert.ok(checkOperations(b).ok);
  applyAllow(b);
  applyReply(a, OK);
  applyFailure(a, 'timeout');
  assert.equal(operations.get('x')!.state, 'pending', "a's reply did not touch b's attempt");
  applyReply(b, OK);
  assert.equal(operations.get('x')!.state, 'succeeded');
});

test('no explicit id: the fingerprint names the call only while unsettled; settled, the same call is a new operation', () => {
  const { services, operations } = setup();
  const plain = args(); // no idempotency_key, no _meta id
  const f = factsFor({ args: plain, services });
  assert.ok(checkOperations(f).ok);
  assert.equal(f.notes.fields.operation_id_source, 'fingerprint');
  applyAllow(f);
  const inFlight = checkOperations(factsFor({ args: plain, services }));
  assert.equal(!inFlight.ok && inFlight.code, 'reconcile_before_retry', 'pending: the same call waits');
  applyReply(f, OK);
  for (const [n, reply] of [[2, OK], [3, { error: { code: -32000, message: 'no' } }], [4, OK]] as const) {
    const again = factsFor({ args: plain, services });
    assert.ok(checkOperations(again).ok);
    assert.equal(again.notes.replay, undefined, 'settled: not replayed');
    assert.equal(again.notes.fields.operation_attempt, n);
    applyAllow(again);
    assert.equal(operations.get(f.fingerprint)!.state, 'pending');
    assert.equal(operations.get(f.fingerprint)!.attempts, n);
    applyReply(again, reply);
  }
  // An unknown outcome still blocks the identical call until an operator reconciles.
  const last = factsFor({ args: plain, services });
  checkOperations(last);
  applyAllow(last);
  operations.fail(f.fingerprint, 5, 'timeout', Date.now());
  const blocked = checkOperations(factsFor({ args: plain, services }));
  assert.equal(!blocked.ok && blocked.code, 'reconcile_before_retry');
});
