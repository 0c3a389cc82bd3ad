// Contract: operations (product.md section 5) through the state machine in operations/. Every
// store keeps the same states, attempts, stored answers, and compare-and-set changes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { hostname } from 'node:os';
import { Operations, OPERATOR_RESULT, ReconcileError, THIS_GATE } from '../../../src/operations/operations.js';
import { FP, FP2, T, tx, type StoreFactory } from './harness.js';

const OK = { result: { content: [{ type: 'text', text: 'sent' }] } };

export function operationsContract(name: string, open: StoreFactory): void {
  const ops = async (owner?: string) => {
    const o = await open();
    const s = new Operations(o.store.operations, owner);
    return { s, in: <T>(fn: () => T) => tx(o.store, fn), ...o };
  };

  test(`${name} operations: begin is pending, attempt 1, durable; a second begin of the same id fails`, async () => {
    const { s, in: t, peer } = await ops();
    assert.equal(await t(() => s.begin('op-1', FP, 'send_email', T)), 1);
    await t(() => {
      const o = s.get('op-1')!;
      assert.equal(o.state, 'pending');
      assert.equal(o.attempts, 1);
      assert.equal(o.owner, THIS_GATE);
      assert.equal(o.result, null);
      assert.equal(o.note, 'begin');
      assert.throws(() => s.begin('op-1', FP, 'send_email', T));
      assert.equal(s.get('nope'), null);
    });
    await assert.rejects(t(() => s.begin('op-1', FP, 'send_email', T)), 'as a transaction of its own too');
    const p = await peer();
    const other = new Operations(p.operations, 'other-gate');
    await tx(p, () => {
      assert.equal(other.get('op-1')!.state, 'pending', 'another connection sees it');
      assert.throws(() => other.begin('op-1', FP, 'send_email', T), 'nor can another gate begin it');
    });
  });

  test(`${name} operations: two connections beginning one id at once: one begins, the other fails whole`, async () => {
    const { store, peer } = await open();
    const stores = [store, await peer(), await peer()];
    const results = await Promise.allSettled(
      stores.flatMap((st, g) =>
        [0, 1, 2].map((i) =>
          tx(st, () => {
            const o = new Operations(st.operations, `gate-${g}`);
            if (o.get('shared') !== null) throw new Error('exists');
            o.begin('shared', FP, 't', T);
            return `gate-${g}/${i}`;
          }),
        ),
      ),
    );
    const won = results.filter((r) => r.status === 'fulfilled');
    assert.equal(won.length, 1);
    const row = await tx(store, () => store.operations.get('shared'));
    assert.equal(row!.owner, (won[0] as PromiseFulfilledResult<string>).value.split('/')[0]);
    assert.equal(row!.attempts, 1);
  });

  test(`${name} operations: a result settles succeeded and is stored; an error or isError is failed`, async () => {
    const { s, in: t } = await ops();
    await t(() => {
      s.begin('a', FP, 't', T);
      assert.equal(s.settle('a', 1, OK, T + 1), 'succeeded');
    });
    await t(() => {
      assert.deepEqual(s.get('a')!.result, OK.result);
      assert.equal(s.get('a')!.note, 'upstream');
      s.begin('b', FP, 't', T);
    });
    assert.equal(await t(() => s.settle('b', 1, { error: { code: -32000, message: 'boom' } }, T)), 'failed');
    await t(() => {
      assert.deepEqual(s.get('b')!.error, { code: -32000, message: 'boom' });
      s.begin('c', FP, 't', T);
      assert.equal(s.settle('c', 1, { result: { content: [], isError: true } }, T), 'failed');
    });
  });

  test(`${name} operations: settle and fail only touch the pending attempt they belong to`, async () => {
    const { s, in: t } = await ops();
    await t(() => s.begin('a', FP, 't', T));
    await t(() => {
      assert.equal(s.settle('a', 2, OK, T), null, 'wrong attempt');
      assert.equal(s.fail('a', 2, 'timeout', T), false);
    });
    assert.equal(await t(() => s.fail('a', 1, 'timeout', T)), true);
    await t(() => {
      assert.equal(s.get('a')!.state, 'unknown');
      assert.equal(s.get('a')!.note, 'timeout');
      assert.equal(s.settle('a', 1, OK, T), null, 'a late answer after unknown changes nothing');
      assert.equal(s.get('a')!.state, 'unknown');
      s.begin('b', FP, 't', T);
      s.settle('b', 1, OK, T);
    });
    assert.equal(await t(() => s.fail('b', 1, 'error', T)), false, 'succeeded stays succeeded');
  });

  test(`${name} operations: retry makes failed pending with the next attempt; from any other state it fails`, async () => {
    const { s, in: t } = await ops();
    await t(() => {
      s.begin('a', FP, 't', T);
      assert.throws(() => s.retry('a', FP, 1, T), /changed/);
    });
    await t(() => s.settle('a', 1, { error: { code: 1, message: 'x' } }, T));
    await t(() => {
      assert.throws(() => s.retry('a', FP2, 1, T), /changed/, 'other fingerprint');
      assert.equal(s.retry('a', FP, 1, T), 2);
    });
    await t(() => {
      const o = s.get('a')!;
      assert.equal(o.state, 'pending');
      assert.equal(o.attempts, 2);
      assert.equal(o.error, null);
      assert.equal(s.settle('a', 1, OK, T), null, 'the old attempt cannot settle the new one');
      assert.equal(s.settle('a', 2, OK, T), 'succeeded');
    });
  });

  test(`${name} operations: start-up makes pending of dead gates (and our own) unknown; a live gate keeps its pending`, async () => {
    const { s, in: t, store } = await ops();
    const dead = new Operations(store.operations, `${hostname()}/999999999/abc`);
    const live = new Operations(store.operations, 'live-gate');
    await t(() => {
      s.begin('mine', FP, 't', T);
      dead.begin('dead', FP, 't', T);
      live.begin('live', FP, 't', T);
      s.begin('done', FP, 't', T);
      s.settle('done', 1, OK, T);
    });
    assert.equal(await t(() => s.recoverPending(T + 5, (o) => o === 'live-gate')), 2);
    await t(() => {
      assert.equal(s.get('mine')!.state, 'unknown');
      assert.equal(s.get('mine')!.note, 'startup');
      assert.equal(s.get('dead')!.state, 'unknown');
      assert.equal(s.get('live')!.state, 'pending');
      assert.equal(s.get('done')!.state, 'succeeded');
    });
    assert.equal(await t(() => s.recoverPending(T + 6, () => false)), 1);
    assert.equal((await t(() => s.get('live')))!.state, 'unknown');
  });

  test(`${name} operations: reconcile unknown → succeeded (with or without a result), failed, not-executed`, async () => {
    const { s, in: t } = await ops();
    await t(() => {
      for (const id of ['a', 'b', 'c', 'd']) {
        s.begin(id, FP, 't', T);
        s.fail(id, 1, 'upstream_exit', T);
      }
    });
    const a = await t(() => s.reconcile('a', 'succeeded', { content: [{ type: 'text', text: 'done' }] }, T));
    assert.equal(a.before.state, 'unknown');
    assert.equal(a.after.state, 'succeeded');
    assert.deepEqual(a.after.result, { content: [{ type: 'text', text: 'done' }] });
    assert.equal(a.after.note, 'operator:succeeded');
    await t(() => {
      assert.deepEqual(s.reconcile('b', 'succeeded', null, T).after.result, OPERATOR_RESULT);
      assert.equal(s.reconcile('c', 'failed', null, T).after.state, 'failed');
    });
    const d = (await t(() => s.reconcile('d', 'not-executed', null, T))).after;
    assert.equal(d.state, 'failed');
    assert.equal(d.note, 'operator:not-executed');
    assert.equal(d.result, null);
    assert.equal(await t(() => s.retry('d', FP, 1, T)), 2, 'not-executed lets the same call run again');
  });

  test(`${name} operations: reconcile refuses what is not unknown, a live pending, and a missing id`, async () => {
    const { s, in: t } = await ops();
    await t(() => s.begin('p', FP, 't', T));
    await t(() => {
      assert.throws(() => s.reconcile('p', 'not-executed', null, T), ReconcileError);
      assert.equal(s.reconcile('p', 'not-executed', null, T, () => false).after.state, 'failed', 'orphaned pending');
      s.begin('ok', FP, 't', T);
      s.settle('ok', 1, OK, T);
    });
    await t(() => {
      assert.throws(() => s.reconcile('ok', 'failed', null, T), /succeeded/);
      assert.throws(() => s.reconcile('missing', 'failed', null, T), /no such/);
    });
  });

  test(`${name} operations: a pending operation of a gate on another host is reconciled only with ownerGone (this host cannot see that gate)`, async () => {
    const { s, in: t } = await ops('gate-host-b/4242/-/0a1b2c3d4e5f');
    await t(() => s.begin('far', FP, 't', T));
    await t(() => {
      // ownerAlive counts another host's gate as gone; settling a call still running there
      // would let a retry run it twice.
      assert.throws(() => s.reconcile('far', 'not-executed', null, T), /another host .*--owner-gone/);
      assert.equal(s.get('far')!.state, 'pending');
    });
    const r = await t(() => s.reconcile('far', 'not-executed', null, T, undefined, true));
    assert.deepEqual([r.before.state, r.after.state], ['pending', 'failed']);
  });

  test(`${name} operations: list by state, oldest change first`, async () => {
    const { s, in: t } = await ops();
    await t(() => {
      s.begin('x', FP, 't', T + 2);
      s.begin('y', FP, 't', T + 1);
    });
    await t(() => s.fail('y', 1, 'timeout', T + 3));
    await t(() => {
      assert.deepEqual(s.list().map((o) => o.id), ['x', 'y']);
      assert.deepEqual(s.list('pending').map((o) => o.id), ['x']);
      assert.deepEqual(s.list('unknown').map((o) => o.id), ['y']);
      assert.deepEqual(s.list('failed'), []);
      assert.equal(s.list(undefined, 1).length, 1);
    });
  });

  test(`${name} operations: ids are kept exactly as given (they may be any text)`, async () => {
    const { s, in: t } = await ops();
    const odd = "'; DROP TABLE operations; --\u0000\\0\u{1F600}\u00e9";
    await t(() => s.begin(odd, FP, 't', T));
    await t(() => {
      assert.equal(s.get(odd)!.id, odd);
      assert.equal(s.get(odd.slice(0, -1)), null);
    });
  });
}
