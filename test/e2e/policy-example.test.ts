// examples/support-agent.{yaml,cedar,context.json} load and behave as their comments say:
// `policy check` passes on them; through the real gate, lookups are allowed, refunds only in a
// premium task and only for the task's own orders, an email is permitted by the policy and then
// needs its approval; the sixth email of an hour is refused (explain, with the counts given).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { cloakpipe, ROOT, writeFiles } from '../helpers/cli.js';
import { arrived, call, decisions, desk, openDesk, summary } from '../helpers/support-desk.js';

const EX = (f: string) => join(ROOT, 'examples', f);
const MANIFEST = EX('support-agent.yaml');
const POLICY = EX('support-agent.cedar');
const CONTEXT = EX('support-agent.context.json');
const example = JSON.parse(readFileSync(CONTEXT, 'utf8'));

test('cloakpipe policy check passes on the example files and lists their rules', () => {
  const r = cloakpipe(['policy', 'check', '--manifest', MANIFEST, '--policy', POLICY, '--context', CONTEXT]);
  assert.equal(r.status, 0, r.stderr);
  for (const id of ['read-lookups', 'email-customer', 'email-hourly-limit', 'refund-premium-tier', 'refund-task-orders']) {
    assert.ok(r.stdout.includes(id), `${id} in:\n${r.stdout}`);
  }
});

test('the example through the real gate: lookups, refunds bound to the task\'s orders and tier, emails need approval', async () => {
  const standard = { ...example, task: { ...example.task, id: 'T-1043', tier: 'standard' } };
  const d = desk({ manifest: readFileSync(MANIFEST, 'utf8'), policy: readFileSync(POLICY, 'utf8'), contexts: { premium: example, standard } });
  const [okOrder, otherOrder] = [example.task.order_ids[0], 'O999999'];
  assert.ok(!example.task.order_ids.includes(otherOrder));

  const g = await openDesk(d, 'premium');
  try {
    assert.equal(summary(await call(g, 'lookup_customer', { customer_id: example.task.customer.id })), 'ok');
    assert.equal(summary(await call(g, 'issue_refund', { order_id: okOrder, amount: 25, idempotency_key: 'refund-1' })), 'ok');
    assert.equal(
      summary(await call(g, 'issue_refund', { order_id: otherOrder, amount: 25, idempotency_key: 'refund-2' })),
      'policy_denied: denied by refund-task-orders',
    );
    // Policy permits the email (email-customer); the manifest's approval comes after it.
    const email = await call(g, 'send_email', { to: example.task.customer.emails[0], subject: 'Your refund', idempotency_key: 'email-1' });
    assert.equal(email.ok ? 'ok' : email.reason, 'approval_required');
  } finally {
    await g.close();
  }

  const s = await openDesk(d, 'standard');
  try {
    assert.equal(summary(await call(s, 'issue_refund', { order_id: okOrder, amount: 25, idempotency_key: 'refund-3' })), 'policy_denied: no policy permits this call');
    assert.equal(summary(await call(s, 'lookup_customer', { customer_id: example.task.customer.id })), 'ok');
  } finally {
    await s.close();
  }

  assert.deepEqual(
    arrived(d).map((r) => [r.tool, r.arguments.order_id ?? r.arguments.customer_id]),
    [
      ['lookup_customer', example.task.customer.id],
      ['issue_refund', okOrder],
      ['lookup_customer', example.task.customer.id],
    ],
  );
  const refunds = decisions(d.home).filter((e) => e.tool === 'issue_refund');
  assert.deepEqual(refunds.map((e) => e.policy_ids), [['refund-premium-tier'], ['refund-task-orders'], []]);
});

test('the hourly email limit of the example: the sixth email of the hour is refused (policy explain)', () => {
  const f = writeFiles({ 'call.json': { tool: 'send_email', arguments: { to: 'ada@example.com', subject: 'hi' } } });
  const explain = (hour: number) =>
    cloakpipe(['policy', 'explain', '--manifest', MANIFEST, '--policy', POLICY, '--context', CONTEXT, '--call', f['call.json'], '--calls-hour', String(hour), '--json']);
  const fifth = explain(4);
  assert.equal(fifth.status, 0, fifth.stderr);
  assert.equal(JSON.parse(fifth.stdout).decision, 'allow');
  const sixth = explain(5);
  assert.equal(sixth.status, 1, sixth.stderr);
  const x = JSON.parse(sixth.stdout);
  assert.equal(x.decision, 'deny');
  assert.deepEqual(x.policyIds ?? x.policy_ids, ['email-hourly-limit']);
});
