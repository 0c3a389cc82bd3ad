// `cloakpipe policy check | explain | schema` through the real binary: exit codes and output.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { EXAMPLE, ROOT, tempDir } from './fixtures.js';

const BIN = join(ROOT, 'bin/cloakpipe.js');

function cli(...args: string[]) {
  const r = spawnSync(process.execPath, [BIN, 'policy', ...args], { encoding: 'utf8' });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

const M = ['--manifest', EXAMPLE.manifest];
const P = ['--policy', EXAMPLE.policy];
const C = ['--context', EXAMPLE.context];

test('check: the example is valid and its ids are listed', () => {
  const r = cli('check', ...M, ...P, ...C);
  assert.equal(r.code, 0, r.err);
  for (const id of ['read-lookups', 'email-customer', 'email-hourly-limit', 'refund-premium-tier', 'refund-task-orders']) assert.match(r.out, new RegExp(id));
  assert.match(r.out, /sha256:[0-9a-f]{64}/);
  const j = JSON.parse(cli('check', ...M, ...P, ...C, '--json').out);
  assert.equal(j.valid, true);
  assert.equal(j.policies.length, 5);
});

test('check: an invalid policy exits 1 with Cedar message and location', () => {
  const dir = tempDir();
  const bad = join(dir, 'bad.cedar');
  writeFileSync(bad, '@id("limit")\nforbid(principal, action, resource == Tool::"send_email")\n  when { context.calls.hours >= 5 };\n');
  const r = cli('check', ...M, '--policy', bad, ...C);
  assert.equal(r.code, 1);
  assert.match(r.err, /bad\.cedar:3:10: for policy `limit`, attribute `calls\.hours` in context/);
  assert.match(r.err, /\^+/);
  writeFileSync(bad, 'permit(principal, action, resource == Tool::"refund");\n');
  const t = cli('check', ...M, '--policy', bad, ...C);
  assert.equal(t.code, 1);
  assert.match(t.err, /bad\.cedar:1:39: .*unknown tool `Tool::"refund"`/);
});

test('check: usage and configuration errors exit 2', () => {
  assert.equal(cli('check', ...P).code, 2);
  assert.equal(cli('check', ...M, ...P, '--bogus').code, 2);
  assert.equal(cli('frobnicate').code, 2);
  assert.equal(cli('check', '--manifest', join(tempDir(), 'missing.yaml'), ...P).code, 2);
  assert.equal(cli('--help').code, 0);
});

test('explain: decision and the policies behind it; exit 0 allow, 1 deny', () => {
  const dir = tempDir();
  const call = join(dir, 'call.json');
  writeFileSync(call, JSON.stringify({ tool: 'send_email', arguments: { to: 'ada@example.com', subject: 'Refund' } }));
  const ok = cli('explain', ...M, ...P, ...C, '--call', call);
  assert.equal(ok.code, 0, ok.err);
  assert.match(ok.out, /decision: allow/);
  assert.match(ok.out, /email-customer \(permit/);
  const limited = cli('explain', ...M, ...P, ...C, '--call', call, '--calls-hour', '5', '--json');
  assert.equal(limited.code, 1);
  const j = JSON.parse(limited.out);
  assert.equal(j.decision, 'deny');
  assert.deepEqual(j.policyIds, ['email-hourly-limit']);
  assert.match(j.policies[0].text, /context\.calls\.hour >= 5/);

  writeFileSync(call, JSON.stringify({ tool: 'issue_refund', arguments: { order_id: 'O555555', amount: 12.5 } }));
  const refund = cli('explain', ...M, ...P, ...C, '--call', call);
  assert.equal(refund.code, 1);
  assert.match(refund.out, /denied by refund-task-orders/);

  writeFileSync(call, JSON.stringify({ tool: 'drop_tables', arguments: {} }));
  assert.match(cli('explain', ...M, ...P, ...C, '--call', call).out, /undeclared_tool/);
  assert.equal(cli('explain', ...M, ...P, ...C, '--call', call, '--calls-hour', 'many').code, 2);
});

test('schema prints the generated Cedar schema', () => {
  const r = cli('schema', ...M, ...C);
  assert.equal(r.code, 0, r.err);
  assert.match(r.out, /entity Tool/);
  assert.match(r.out, /action "call_tool"/);
  assert.match(r.out, /order_ids: Set<__cedar::String>/);
});
