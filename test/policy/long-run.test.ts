// A gate evaluates Cedar for every call of a long session: ten thousand evaluations in one
// process must not bring it down (Node 20's V8 aborted here before the v8-guard flag).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadPolicy } from '../../src/policy/engine.js';
import { buildManifest } from '../../src/contract/manifest.js';

test('ten thousand evaluations in one process', () => {
  const m = buildManifest({ version: 1, release: 'r@1', tools: { t: { effect: 'read', arguments: { n: { type: 'integer' } } } } });
  const engine = loadPolicy(m.manifest, '@id("p") permit (principal, action, resource) when { context.calls.hour < 1000000 };\n@id("f") forbid (principal, action, resource) when { context has args && context.args has n && context.args.n == 7 };');
  let allowed = 0;
  for (let i = 0; i < 10_000; i++) {
    // evaluateFresh: Cedar itself each time (evaluate would reuse the ten distinct answers).
    const r = engine.evaluateFresh({ agent: 'a', tool: 't', args: { n: i % 10 }, task: {}, sessionLabel: 'public', calls: { minute: i, hour: i, day: i }, callsAll: { minute: 0, hour: 0, day: 0 } });
    if (r.allow) allowed++;
  }
  assert.equal(allowed, 9_000);
});
