// Contract: operations (product.md section 5) through the state machine in operations/. Every
// store keeps the same states, attempts, stored answers, and compare-and-set changes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { hostname } from 'node:os';
import { Operations, OPERATOR_RESULT, ReconcileError, THIS_GATE } from '../../../src/operations/operations.js';
import { FP, FP2, T, type StoreFactory } from './harness.js';

const OK = { result: { content: [{ type: 'text', text: 'sent' }] } };

export function operationsContract(name: string, open: StoreFactory): void {
  const ops = async (owner?: string) => {
    const o = await open();
    return { s: new Operations(o.store.operations, owner), ...o };
  };

  test(`${name} operations: begin is pending, attempt 1, durable; a second begin of the same id fails`, async () => {
    const { s, peer } = await ops();
    assert.equal(s.begin('op-1', FP, 'send_email', T), 1);
    const o = s.get('op-1')!;
    assert.equal(o.state, 'pending');
    assert.equal(o.attempts, 1);
    assert.equal(o.owner, THIS_GATE);
    assert.equal(o.result, null);
    assert.equal(o.note, 'begin');
    assert.throws(() => s.begin('op-1', FP, 'send_email', T));
    assert.equal(s.get('nope'), null);
    const other = new Operations((await peer()).operations, 'other-gate');
    assert.equal(other.get('op-1')!.state, 'pending', 'another connection sees it');
    assert.throws(() => other.begin('op-1', FP, 'send_email', T), 'nor can another gate begin it');
  });

  test(`${name} operations: a result settles succeeded and is stored; an error or isError is failed`, async () => {
    const { s } = await ops();
    s.begin('a', FP, 't', T);
    assert.equal(s.settle('a', 1, OK, T + 1), 'succeeded');
    assert.deepEqual(s.get('a')!.result, OK.result);
    assert.equal(s.get('a')!.note, 'upstream');
    s.begin('b', FP, 't', T);
    assert.equal(s.settle('b', 1, { error: { code: -32000, message: 'boom' } }, T), 'failed');
    assert.deepEqual(s.get('b')!.error, { code: -32000, message: 'boom' });
    s.begin('c', FP, 't', T);
    assert.equal(s.settle('c', 1, { result: { content: [], isError: true } }, T), 'failed');
  });

  test(`${name} operations: settle and fail only touch the pending attempt they belong to`, async () => {
    const { s } = await ops();
    s.begin('a', FP, 't', T);
    assert.equal(s.settle('a', 2, OK, T), null, 'wrong attempt');
    assert.equal(s.fail('a', 2, 'timeout', T), false);
    assert.equal(s.fail('a', 1, 'timeout', T), true);
    assert.equal(s.get('a')!.state, 'unknown');
    assert.equal(s.get('a')!.note, 'timeout');
    assert.equal(s.settle('a', 1, OK, T), null, 'a late answer after unknown changes nothing');
    assert.equal(s.get('a')!.state, 'unknown');
    s.begin('b', FP, 't', T);
    s.settle('b', 1, OK, T);
    assert.equal(s.fail('b', 1, 'error', T), false, 'succeeded stays succeeded');
  });

  test(`${name} operations: retry makes failed pending with the next attempt; from any other state it fails`, async () => {
    const { s } = await ops();
    s.begin('a', FP, 't', T);
    assert.throws(() => s.retry('a', FP, 1, T), /changed/);
    s.settle('a', 1, { error: { code: 1, message: 'x' } }, T);
    assert.throws(() => s.retry('a', FP2, 1, T), /changed/, 'other fingerprint');
    assert.equal(s.retry('a', FP, 1, T), 2);
    const o = s.get('a')!;
    assert.equal(o.state, 'pending');
    assert.equal(o.attempts, 2);
    assert.equal(o.error, null);
    assert.equal(s.settle('a', 1, OK, T), null, 'the old attempt cannot settle the new one');
    assert.equal(s.settle('a', 2, OK, T), 'succeeded');
  });

  test(`${name} operations: start-up makes pending of dead gates (and our own) unknown; a live gate keeps its pending`, async () => {
    const { s, store } = await ops();
    const dead = new Operations(store.operations, `${hostname()}/999999999/abc`);
    const live = new Operations(store.operations, 'live-gate');
    s.begin('mine', FP, 't', T);
    dead.begin('dead', FP, 't', T);
    live.begin('live', FP, 't', T);
    s.begin('done', FP, 't', T);
    s.settle('done', 1, OK, T);
    const n = s.recoverPending(T + 5, (o) => o === 'live-gate');
    assert.equal(n, 2);
    assert.equal(s.get('mine')!.state, 'unknown');
    assert.equal(s.get('mine')!.note, 'startup');
    assert.equal(s.get('dead')!.state, 'unknown');
    assert.equal(s.get('live')!.state, 'pending');
    assert.equal(s.get('done')!.state, 'succeeded');
    assert.equal(s.recoverPending(T + 6, () => false), 1);
    assert.equal(s.get('live')!.state, 'unknown');
  });

  test(`${name} operations: reconcile unknown → succeeded (with or without a result), failed, not-executed`, async () => {
    const { s } = await ops();
    for (const id of ['a', 'b', 'c', 'd']) {
      s.begin(id, FP, 't', T);
      s.fail(id, 1, 'upstream_exit', T);
    }
    const a = s.reconcile('a', 'succeeded', { content: [{ type: 'text', text: 'done' }] }, T);
    assert.equal(a.before.state, 'unknown');
    assert.equal(a.after.state, 'succeeded');
    assert.deepEqual(a.after.result, { content: [{ type: 'text', text: 'done' }] });
    assert.equal(a.after.note, 'operator:succeeded');
    assert.deepEqual(s.reconcile('b', 'succeeded', null, T).after.result, OPERATOR_RESULT);
    assert.equal(s.reconcile('c', 'failed', null, T).after.state, 'failed');
    const d = s.reconcile('d', 'not-executed', null, T).after;
    assert.equal(d.state, 'failed');
    assert.equal(d.note, 'operator:not-executed');
    assert.equal(d.result, null);
    assert.equal(s.retry('d', FP, 1, T), 2, 'not-executed lets the same call run again');
  });

  test(`${name} operations: reconcile refuses what is not unknown, a live pending, and a missing id`, async () => {
    const { s } = await ops();
    s.begin('p', FP, 't', T);
    assert.throws(() => s.reconcile('p', 'not-executed', null, T), ReconcileError);
    assert.equal(s.reconcile('p', 'not-executed', null, T, () => false).after.state, 'failed', 'orphaned pending');
    s.begin('ok', FP, 't', T);
    s.settle('ok', 1, OK, T);
    assert.throws(() => s.reconcile('ok', 'failed', null, T), /succeeded/);
    assert.throws(() => s.reconcile('missing', 'failed', null, T), /no such/);
  });

  test(`${name} operations: list by state, oldest change first`, async () => {
    const { s } = await ops();
    s.begin('x', FP, 't', T + 2);
    s.begin('y', FP, 't', T + 1);
    s.fail('y', 1, 'timeout', T + 3);
    assert.deepEqual(s.list().map((o) => o.id), ['x', 'y']);
    assert.deepEqual(s.list('pending').map((o) => o.id), ['x']);
    assert.deepEqual(s.list('unknown').map((o) => o.id), ['y']);
    assert.deepEqual(s.list('failed'), []);
    assert.equal(s.list(undefined, 1).length, 1);
  });

  test(`${name} operations: ids are kept exactly as given (they may be any text)`, async () => {
    const { s } = await ops();
    const odd = "'; DROP TABLE operations; --\u0000\u{1F600}";
    s.begin(odd, FP, 't', T);
    assert.equal(s.get(odd)!.id, odd);
    assert.equal(s.get(odd.slice(0, -1)), null);
  });
}
