// `manifest draft` of servers that list very many tools: the work grows with the number of
// tools, not its square (counted, never timed), and one page of 130,000 tools is drafted through
// the real binary rather than overflowing the stack.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { cloakpipe, tempDir, ROOT } from '../helpers/cli.js';
import { checkDraftLoads, draftFromTools, type ListedTool } from '../../src/onboarding/draft.js';

/** `n` tools whose names count how often the drafter reads them. */
function countedTools(n: number): { tools: ListedTool[]; reads: () => number } {
  let reads = 0;
  const tools = Array.from({ length: n }, (_, i) => {
    const name = `tool_${i}`;
    return Object.defineProperty({ annotations: { readOnlyHint: i % 2 === 0 }, inputSchema: { type: 'object', properties: { q: { type: 'string' } } } }, 'name', {
      enumerable: true,
      get: () => (reads++, name),
    }) as ListedTool;
  });
  return { tools, reads: () => reads };
}

test('drafting reads each tool a bounded number of times, however many there are', () => {
  const perTool = [1000, 4000].map((n) => {
    const { tools, reads } = countedTools(n);
    const d = draftFromTools(tools, { release: 'many@1', source: 'test' });
    assert.equal(d.declared.length, n);
    assert.match(d.policy, /@id\("write:tool_1"\)/);
    assert.match(d.policy, /@id\("read:tool_0"\)/);
    return reads() / n;
  });
  // Looked up by name in the whole list for the policy, a tool was read about n/2 times more.
  assert.ok(perTool[1] <= 10, `reads per tool at 4000 tools: ${perTool[1]}`);
  assert.equal(perTool[0], perTool[1], 'reads per tool do not grow with the number of tools');
});

test('one tools/list page of 130,000 tools is drafted through the binary (it overflowed the stack when copied into the list as spread arguments)', () => {
  const dir = tempDir('cloakpipe-draft-many-');
  const out = join(dir, 'm.yaml');
  const r = cloakpipe(['manifest', 'draft', '--out', out, '--timeout', '5m', '--', process.execPath, join(ROOT, 'dist/test/onboarding/many-tools-server.js'), '130000'], { timeout: 600_000 });
  assert.equal(r.error, undefined);
  assert.equal(r.status, 0, r.stderr);
  const manifest = readFileSync(out, 'utf8');
  assert.match(manifest, /^ {2}t129999:$/m);
  assert.equal(readFileSync(join(dir, 'm.cedar'), 'utf8').match(/^permit /gm)?.length, 130000);
});

test("the draft's own load check still refuses a key twice, in any mapping", () => {
  const ok = 'version: 1\nrelease: "r@1"\ntools:\n  a:\n    effect: read\n    arguments:\n      q: { type: string }\n';
  checkDraftLoads(ok);
  assert.throws(() => checkDraftLoads(ok + '  a:\n    effect: read\n'), /the key "a" twice/);
  assert.throws(() => checkDraftLoads(ok.replace('q: { type: string }', 'q: { type: string, type: integer }')), /the key "type" twice/);
});
