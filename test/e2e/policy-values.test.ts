// Issue 12.7 through the real binary: argument values Cedar cannot hold (a number with more
// than 4 decimals or outside Cedar's range, a null inside an array) were refused `fail_closed`
// under a permit-all policy. They are left out of context.args: the call is forwarded, the
// tool receives the values as sent, and a forbid written with `has` still applies to them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { cloakpipe, helperScript, makeHome, PERMIT_ALL, tempDir, writeFiles } from '../helpers/cli.js';
import { startGate } from '../helpers/gate.js';

const MANIFEST = `version: 1
release: values@1
tools:
  echo:
    effect: read
    arguments:
      a: { type: number }
      n: { type: integer }
      xs: { type: array, items: { type: number } }
      any: {}
      loose: { type: array }
`;

// (null inside `xs` is argument_invalid by the manifest's items rule: untyped arrays carry it.)
const VALUES: Record<string, unknown>[] = [
  { a: 48.856613 },
  { a: 1e15 },
  { n: 1e15 },
  { xs: [1.5, 0.123456] },
  { loose: [null] },
  { any: [1, null, 0.1234567] },
  { a: -1e15, loose: [1, 'x', null] },
];

async function run(policy: string, calls: Record<string, unknown>[]) {
  const f = writeFiles({ 'm.yaml': MANIFEST, 'p.cedar': policy });
  const record = join(tempDir(), 'record.jsonl');
  const home = makeHome();
  const g = await startGate({ home, manifest: f['m.yaml'], policy: f['p.cedar'], upstream: [process.execPath, helperScript('upstream.js')], env: { RECORD_LINES: record } });
  const outcomes: string[] = [];
  for (const args of calls) {
    try {
      const r = await g.client.callTool({ name: 'echo', arguments: args });
      outcomes.push(r.isError ? 'tool_error' : 'ok');
    } catch (e) {
      assert.ok(e instanceof McpError);
      outcomes.push(String((e.data as { reason?: string }).reason));
    }
  }
  await g.close();
  const arrived = readFileSync(record, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l)).filter((m) => m.method === 'tools/call').map((m) => m.params.arguments);
  const ledger = cloakpipe(['ledger', 'show', '--json', '--home', home]).stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l));
  return { outcomes, arrived, decisions: ledger.filter((e) => e.kind === 'decision') };
}

test('12.7: under permit-all every value is forwarded as sent, whatever Cedar can hold', async () => {
  const r = await run(PERMIT_ALL, VALUES);
  assert.deepEqual(r.outcomes, VALUES.map(() => 'ok'));
  assert.deepEqual(r.arrived, VALUES);
  assert.deepEqual(r.decisions.map((d) => d.outcome), VALUES.map(() => 'allow'));
});

test('12.7: a forbid written with `has` applies to a value left out; the entry names the argument, never the value', async () => {
  const policy = `${PERMIT_ALL}@id("small-a")
forbid (principal, action, resource) unless { context.args has a && context.args.a.lessThan(decimal("100.0")) };
`;
  const r = await run(policy, [{ a: 48.8566 }, { a: 48.856613 }, { a: 1e15 }]);
  assert.deepEqual(r.outcomes, ['ok', 'policy_denied', 'policy_denied']);
  assert.deepEqual(r.arrived, [{ a: 48.8566 }]);
  assert.deepEqual(r.decisions.map((d) => d.policy_omitted ?? null), [null, ['a'], ['a']]);
  assert.deepEqual(r.decisions.map((d) => d.policy_ids), [['policy0'], ['small-a'], ['small-a']]);
  assert.ok(!JSON.stringify(r.decisions).includes('856613'));
});
