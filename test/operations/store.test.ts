import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { hostname } from 'node:os';
import { openDb } from '../../src/store/sqlite.js';
import { OperationsStore, OPERATOR_RESULT, ReconcileError, THIS_GATE, attachOperations, outcomeOf, ownerAlive } from '../../src/operations/store.js';
import { gateLikeDb, tempDir } from './helpers.js';

const T = Date.parse('2026-11-30T08:00:00.000Z');
const FP = 'sha256:' + 'a'.repeat(64);
const FP2 = 'sha256:' + 'b'.repeat(64);
const OK = { result: { content: [{ type: 'text', text: 'sent' }] } };

function store(owner?: string) {
  const { db, dir } = gateLikeDb();
  return { s: new OperationsStore(db, 'ops', owner), db, dir };
}

test('begin: pending, attempt 1, durable row; a second begin of the same id fails', () => {
  const { s } = store();
  assert.equal(s.begin('op-1', FP, 'send_email', T), 1);
  const o = s.get('op-1')!;
  assert.equal(o.state, 'pending');
  assert.equal(o.attempts, 1);
  assert.equal(o.owner, THIS_GATE);
  assert.equal(o.result, null);
  assert.throws(() => s.begin('op-1', FP, 'send_email', T));
  assert.equal(s.get('nope'), null);
});

test('settle: a result → succeeded with the result stored; error or isError → failed', () => {
  const { s } = store();
  s.begin('a', FP, 't', T);
  assert.equal(s.settle('a', 1, OK, T + 1), 'succeeded');
  assert.deepEqual(s.get('a')!.result, OK.result);
  assert.equal(s.get('a')!.note, 'upstream');
  s.begin('b', FP, 't', T);
  assert.equal(s.settle('b', 1, { error: { code: -32000, message: 'boom' } }, T), 'failed');
  assert.deepEqual(s.get('b')!.error, { code: -32000, message: 'boom' });
  s.begin('c', FP, 't', T);
  assert.equal(s.settle('c', 1, { result: { content: [], isError: true } }, T), 'failed');
  assert.equal(outcomeOf({}), 'failed');
});

test('settle and fail only touch the pending attempt they belong to', () => {
  const { s } = store();
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

test('retry: failed → pending with the next attempt; from any other state it fails', () => {
  const { s } = store();
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

test('start-up: pending of dead gates (and our own) become unknown; a live gate keeps its pending', () => {
  const { s, db } = store();
  const dead = new OperationsStore(db, 'ops', `${hostname()}/999999999/abc`);
  const live = new OperationsStore(db, 'ops', 'live-gate');
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

test('ownerAlive: this process yes, a dead pid or another host no, a running process yes', () => {
  assert.equal(ownerAlive(THIS_GATE), true);
  assert.equal(ownerAlive(null), false);
  assert.equal(ownerAlive('garbage'), false);
  assert.equal(ownerAlive(`other-host-${hostname()}/1/ab`), false);
  assert.equal(ownerAlive(`${hostname()}/999999999/ab`), false);
  assert.equal(ownerAlive(`${hostname()}/${process.ppid}/ab`), true);
  assert.equal(ownerAlive(`${hostname()}/${process.pid}/00`), false, 'an earlier process with our pid');
});

test('reconcile: unknown → succeeded (with or without a result), failed, not-executed', () => {
  const { s } = store();
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
  // not-executed lets the same call run again.
  assert.equal(s.retry('d', FP, 1, T), 2);
});

test('reconcile refuses what is not unknown, a live pending, and a missing id', () => {
  const { s, db } = store();
  s.begin('p', FP, 't', T);
  assert.throws(() => s.reconcile('p', 'not-executed', null, T), ReconcileError);
  assert.equal(s.reconcile('p', 'not-executed', null, T, () => false).after.state, 'failed', 'orphaned pending');
  s.begin('ok', FP, 't', T);
  s.settle('ok', 1, OK, T);
  assert.throws(() => s.reconcile('ok', 'failed', null, T), /succeeded/);
  assert.throws(() => s.reconcile('missing', 'failed', null, T), /no such/);
  void db;
});

test('used receipts: recorded once; a second use fails even through another connection', () => {
  const { s, dir } = store();
  const u = { receipt_id: 'sha256:' + 'c'.repeat(64), nonce: 'n'.repeat(22), approver: FP, fingerprint: FP2, receipt: '{}' };
  assert.equal(s.usedReceipt(u.receipt_id), null);
  s.consumeReceipt(u, T);
  assert.equal(s.usedReceipt(u.receipt_id)!.used_at, '2026-11-30T08:00:00.000Z');
  assert.throws(() => s.consumeReceipt(u, T), /UNIQUE|PRIMARY/);
  const direct = new OperationsStore(openDb(join(dir, 'operations.db')), 'main');
  assert.ok(direct.usedReceipt(u.receipt_id));
  assert.throws(() => direct.consumeReceipt(u, T), /UNIQUE|PRIMARY/);
});

test('the same tables under main and under an attached schema', () => {
  const dir = tempDir();
  const a = new OperationsStore(openDb(join(dir, 'operations.db'), { create: true }), 'main');
  a.begin('x', FP, 't', T);
  const db = openDb(join(dir, 'ledger.db'), { create: true });
  attachOperations(db, join(dir, 'operations.db'));
  const b = new OperationsStore(db, 'ops');
  assert.equal(b.get('x')!.state, 'pending');
  assert.equal(b.list('pending').length, 1);
  assert.equal(b.list('unknown').length, 0);
  assert.equal(b.list().length, 1);
  assert.throws(() => new OperationsStore(db, 'ops; DROP TABLE x'), /schema/);
});
