// `cloakpipe manifest draft` against a server whose tools/list is built to hurt the drafter
// (test/helpers/listing-server.ts): the draft still loads and passes policy check, and what it
// could not turn into rules is named in it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { cloakpipe, helperScript, tempDir } from '../helpers/cli.js';

function draft(how: string[]) {
  const dir = tempDir('cloakpipe-draft-');
  const out = join(dir, 'm.yaml');
  const r = cloakpipe(['manifest', 'draft', '--out', out, '--', process.execPath, helperScript('listing-server.js'), ...how], { timeout: 120_000 });
  assert.equal(r.status, 0, r.stderr);
  const check = cloakpipe(['policy', 'check', '--manifest', out, '--policy', join(dir, 'm.cedar')]);
  assert.equal(check.status, 0, `policy check: ${check.stdout}${check.stderr}`);
  return readFileSync(out, 'utf8');
}

test('an argument whose arrays nest a thousand deep: drafted to a bounded depth, the rest named as unchecked', () => {
  const manifest = draft(['deep', '1000']);
  const rows = (parseYaml(manifest) as { tools: { nested: { arguments: { rows: unknown } } } }).tools.nested.arguments.rows;
  let depth = 0;
  for (let r = rows as { type?: string; items?: unknown }; r.items !== undefined; r = r.items as typeof r) depth++;
  assert.equal(depth, 16);
  assert.match(manifest, /# v1 cannot hold: rows(\[\]){16}: items nests arrays deeper than 16; the elements are left unchecked/);
});
