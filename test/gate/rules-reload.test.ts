// Issue 12.16 through the real binary: the manifest and policy files are re-read when they
// change, like the task context. A change that loads is a `reload` entry with the new digests
// and holds from the next call; one that does not load refuses every call fail_closed until it
// is mended. Before, a forbid-all written under a running gate still let writes through.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { digestBytes } from '../../src/core/digest.js';
import { loadManifest } from '../../src/contract/manifest.js';
import { arrived, call, DESK_MANIFEST, desk, ledgerOf, openDesk, summary } from '../helpers/support-desk.js';

const PERMIT_ALL = '@id("all")\npermit (principal, action, resource);\n';
const FORBID_ALL = '@id("none")\nforbid (principal, action, resource);\n' + PERMIT_ALL;

/** Replace a file the way an operator's tooling should: write aside, then rename. */
function replace(path: string, text: string): void {
  writeFileSync(`${path}.tmp`, text);
  renameSync(`${path}.tmp`, path);
}

let n = 0;
const email = () => ({ to: 'ada@example.com', subject: 'hi', idempotency_key: `k-${++n}` });

test('12.16: a policy changed under a running gate holds from the next call; a broken one fails closed until mended', async () => {
  const d = desk({ policy: PERMIT_ALL, contexts: { t: { task: { id: 'T-7' } } } });
  const g = await openDesk(d, 't');
  try {
    assert.equal(summary(await call(g, 'send_email', email())), 'ok');

    replace(d.policy, FORBID_ALL);
    assert.equal(summary(await call(g, 'send_email', email())), 'policy_denied: denied by none');

    replace(d.policy, 'permit (principal, action, resource) when { context.nonsense };\n');
    for (const tool of ['send_email', 'lookup_customer'] as const) {
      const r = await call(g, tool, tool === 'send_email' ? email() : { customer_id: 'C000001' });
      assert.ok(!r.ok);
      assert.equal(r.reason, 'fail_closed');
      assert.match(r.detail, /does not load/);
    }
    assert.match(g.stderr(), /policy\.cedar:1:\d+/, "the operator's log says where the policy is broken");

    replace(d.policy, PERMIT_ALL + '// mended\n');
    assert.equal(summary(await call(g, 'send_email', email())), 'ok');
  } finally {
    await g.close();
  }
  assert.equal(arrived(d, 'send_email').length, 2, 'only the calls under a loaded permit reached the tool');

  const entries = ledgerOf(d.home);
  const reloads = entries.filter((e) => e.kind === 'reload');
  const manifestDigest = loadManifest(d.manifest).digest;
  assert.deepEqual(
    reloads.map((e) => [e.outcome, e.policy_digest ?? null, e.manifest_digest ?? null]),
    [
      ['loaded', digestBytes(Buffer.from(FORBID_ALL)), manifestDigest],
      ['failed', null, null],
      ['loaded', digestBytes(readFileSync(d.policy)), manifestDigest],
    ],
  );
  // Each decision names the policy it was made under; each reload precedes the first such decision.
  const decisions = entries.filter((e) => e.kind === 'decision');
  assert.deepEqual(
    decisions.map((e) => [e.outcome, e.reason ?? null]),
    [['allow', null], ['refuse', 'policy_denied'], ['refuse', 'fail_closed'], ['refuse', 'fail_closed'], ['allow', null]],
  );
  assert.equal(decisions[1].policy_digest, reloads[0].policy_digest);
  assert.equal(decisions[4].policy_digest, reloads[2].policy_digest);
  assert.ok(entries.indexOf(reloads[0]) < entries.indexOf(decisions[1]));
});

test('12.16: a manifest change holds from the next call; a broken manifest fails closed until mended', async () => {
  const d = desk({ policy: PERMIT_ALL, contexts: { t: { task: { id: 'T-8' } } } });
  const g = await openDesk(d, 't');
  try {
    assert.equal(summary(await call(g, 'send_email', email())), 'ok');
    // The release no longer declares send_email.
    const without = DESK_MANIFEST.replace(/  send_email:\n(    .*\n|      .*\n)*/, '');
    assert.ok(!without.includes('send_email'));
    replace(d.manifest, without);
    const r = await call(g, 'send_email', email());
    assert.equal(r.ok ? 'ok' : r.reason, 'undeclared_tool');

    replace(d.manifest, DESK_MANIFEST.replace('version: 1', 'version: 1\nbogus_key: 1'));
    const broken = await call(g, 'lookup_customer', { customer_id: 'C000001' });
    assert.equal(broken.ok ? 'ok' : broken.reason, 'fail_closed');

    replace(d.manifest, DESK_MANIFEST);
    assert.equal(summary(await call(g, 'send_email', email())), 'ok');
  } finally {
    await g.close();
  }
  const reloads = ledgerOf(d.home).filter((e) => e.kind === 'reload');
  assert.deepEqual(reloads.map((e) => e.outcome), ['loaded', 'failed', 'loaded']);
  assert.notEqual(reloads[0].manifest_digest, reloads[2].manifest_digest);
  assert.equal(arrived(d, 'send_email').length, 2);
});

test('a policy deployed before the task context whose shape it reads loads once that context arrives', async () => {
  const d = desk({ policy: PERMIT_ALL, contexts: { t: { task: { id: 'T-9' } } } });
  const g = await openDesk(d, 't');
  try {
    assert.equal(summary(await call(g, 'send_email', email())), 'ok');
    // The new policy reads task.region, which the task context in force does not have yet.
    replace(d.policy, '@id("eu")\npermit (principal, action, resource) when { context.task.region == "eu" };\n');
    const early = await call(g, 'send_email', email());
    assert.equal(early.ok ? 'ok' : early.reason, 'fail_closed');
    // The orchestrator writes the task context of that shape: the policy loads under it.
    replace(d.contexts.t, JSON.stringify({ task: { id: 'T-9', region: 'eu' } }));
    assert.equal(summary(await call(g, 'send_email', email())), 'ok');
    // A task context gone unreadable and back: the same.
    replace(d.policy, '@id("eu2")\npermit (principal, action, resource) when { context.task.region == "eu" && context.task has id };\n');
    replace(d.contexts.t, '{');
    const unreadable = await call(g, 'send_email', email());
    assert.equal(unreadable.ok ? 'ok' : unreadable.reason, 'fail_closed');
    replace(d.contexts.t, JSON.stringify({ task: { id: 'T-9', region: 'eu' } }));
    assert.equal(summary(await call(g, 'send_email', email())), 'ok');
  } finally {
    await g.close();
  }
  assert.deepEqual(ledgerOf(d.home).filter((e) => e.kind === 'reload').map((e) => e.outcome), ['failed', 'loaded', 'failed', 'loaded']);
  assert.equal(arrived(d, 'send_email').length, 3);
});
