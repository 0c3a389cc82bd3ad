// RulesSource (gate/rules.ts) over real files and the real loaders: a change is seen at the next
// refresh, its entry is offered until it is durable, a file that does not load (or is gone)
// breaks every decision until it loads again. The files are stat'ed once a turn (ADR 032): a
// call arrives in an I/O callback, a turn of its own, so each change here is followed by one.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { renameSync, rmSync, writeFileSync } from 'node:fs';
import { digestBytes } from '../../src/core/digest.js';
import { fileRules, RulesBroken, RulesSource } from '../../src/gate/rules.js';
import { PERMIT_ALL, writeFiles } from '../helpers/cli.js';

const MANIFEST = 'version: 1\nrelease: rules@1\ntools:\n  echo:\n    effect: read\n';

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

async function replace(path: string, text: string) {
  writeFileSync(`${path}.tmp`, text);
  renameSync(`${path}.tmp`, path);
  await nextTurn();
}

test('a change is offered until recorded; a broken file refuses until mended; a deleted one too', async () => {
  const f = writeFiles({ 'm.yaml': MANIFEST, 'p.cedar': PERMIT_ALL });
  const files = { manifest: f['m.yaml'], policy: f['p.cedar'] };
  const logs: string[] = [];
  const load = fileRules(files, (m) => logs.push(m));
  const loaded: string[] = [];
  const rules = new RulesSource(files, load, load({}), { log: (m) => logs.push(m), onLoaded: (r) => loaded.push(r.policy.digest) });
  const task = () => ({});
  assert.equal(rules.refresh(task), null, 'nothing changed');

  const forbid = '@id("none") forbid (principal, action, resource);\n';
  await replace(files.policy, forbid);
  const change = rules.refresh(task);
  assert.deepEqual(change, { kind: 'reload', outcome: 'loaded', manifest_digest: rules.current().manifest.digest, policy_digest: digestBytes(forbid) });
  assert.equal(rules.current().policy.digest, digestBytes(forbid), 'holds at once');
  assert.equal(rules.refresh(task), change, 'offered again while not durable');
  rules.recorded(change!);
  assert.equal(rules.refresh(task), null);
  assert.deepEqual(loaded, [digestBytes(forbid)]);

  await replace(files.policy, 'permit (principal, action, resource) when { context.nonsense };\n');
  assert.deepEqual(rules.refresh(task), { kind: 'reload', outcome: 'failed' });
  assert.throws(() => rules.current(), RulesBroken);
  assert.equal(rules.lastLoaded.policy.digest, digestBytes(forbid), 'refusals name the last rules that loaded');
  assert.match(logs.join('\n'), /p\.cedar:1:\d+/);

  await replace(files.policy, PERMIT_ALL);
  rules.recorded(rules.refresh(task)!);
  assert.equal(rules.current().policy.digest, digestBytes(PERMIT_ALL));

  rmSync(files.manifest);
  await nextTurn();
  assert.deepEqual(rules.refresh(task), { kind: 'reload', outcome: 'failed' });
  assert.throws(() => rules.current(), RulesBroken);
  writeFileSync(files.manifest, MANIFEST);
  await nextTurn();
  assert.equal(rules.refresh(task)?.outcome, 'loaded');
  assert.doesNotThrow(() => rules.current());
});

test('a policy that does not fit the task context in force does not load', async () => {
  const f = writeFiles({ 'm.yaml': MANIFEST, 'p.cedar': PERMIT_ALL });
  const files = { manifest: f['m.yaml'], policy: f['p.cedar'] };
  const load = fileRules(files, () => undefined);
  const rules = new RulesSource(files, load, load({ tier: 'gold' }));
  await replace(files.policy, '@id("t") permit (principal, action, resource) when { context.task.tier == "gold" };\n');
  assert.equal(rules.refresh(() => ({ tier: 'gold' }))?.outcome, 'loaded');
  await replace(files.policy, '@id("t") permit (principal, action, resource) when { context.task.level == "gold" };\n');
  assert.equal(rules.refresh(() => ({ tier: 'gold' }))?.outcome, 'failed');
});

test('the files are stat\'ed once a turn: a change this process makes mid-turn is seen from the next turn', async () => {
  const f = writeFiles({ 'm.yaml': MANIFEST, 'p.cedar': PERMIT_ALL });
  const files = { manifest: f['m.yaml'], policy: f['p.cedar'] };
  const load = fileRules(files, () => undefined);
  const rules = new RulesSource(files, load, load({}));
  await nextTurn();
  assert.equal(rules.refresh(() => ({})), null);
  writeFileSync(`${files.policy}.tmp`, '@id("none") forbid (principal, action, resource);\n');
  renameSync(`${files.policy}.tmp`, files.policy);
  assert.equal(rules.refresh(() => ({})), null, 'same turn: the stamp of this turn stands');
  await nextTurn();
  assert.equal(rules.refresh(() => ({}))?.outcome, 'loaded', 'the next turn (where the next call arrives) sees it');
});
