// The worked example in docs/scope.md is the command's output over examples/scope/: regenerated
// and compared here, so the documented report can never drift from what the command says.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../helpers/cli.js';

test('docs/scope.md: the example report block and the example evidence files are what the command produces', () => {
  const r = spawnSync(process.execPath, [join(ROOT, 'scripts/scope-example.mjs'), '--check'], { cwd: ROOT, encoding: 'utf8', timeout: 300_000 });
  assert.equal(r.status, 0, r.stderr);
});

test('docs/scope.md: the example shows complete mediation NOT ESTABLISHED because of the deployment path', () => {
  const doc = readFileSync(join(ROOT, 'docs/scope.md'), 'utf8');
  assert.match(doc, /4\. complete mediation\s+NOT ESTABLISHED\n\s+missing:\n\s+- path backoffice \(deployment, mediator none\)/);
  assert.match(doc, /observation\s+analogue only\s+a synthetic canary probe is not order_create/);
});

test('docs/scope.md: the documented evidence schema names exactly the keys the parser accepts', async () => {
  const { RECORD_KEYS } = await import('../../src/scope/evidence.js');
  const doc = readFileSync(join(ROOT, 'docs/scope.md'), 'utf8');
  const m = /<!-- scope-evidence-schema:begin -->\n```json\n([\s\S]*?)```\n<!-- scope-evidence-schema:end -->/.exec(doc);
  assert.ok(m, 'schema block present');
  const schema = JSON.parse(m![1]);
  for (const [type, [req, opt]] of Object.entries(RECORD_KEYS)) {
    const def = schema.$defs[type];
    assert.deepEqual([...def.required].sort(), [...req].sort(), `${type} required`);
    assert.deepEqual(Object.keys(def.properties).sort(), [...req, ...opt].sort(), `${type} properties`);
  }
  assert.deepEqual(schema.required, ['format', 'version', 'producer', 'records']);
});
