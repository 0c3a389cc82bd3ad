// A canary in call arguments reaches the tool (positive control) and appears in no log line,
// no error message and no ledger row: allowed or refused, only digests are recorded.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { makeHome, writeFiles, helperScript, tempDir, cloakpipe, PERMIT_ALL } from '../helpers/cli.js';
import { startGate } from '../helpers/gate.js';

const CANARY = 'CANARY-args-91c2e7d4';

const MANIFEST = `version: 1
release: canary@1
tools:
  echo:
    effect: read
    arguments:
      text: { type: string, max_len: 64 }
      to: { type: string, one_of_context: task.allowed }
      code: { type: string, pattern: "[0-9]{4}" }
`;

test('argument canaries reach the tool and nothing else', async () => {
  const f = writeFiles({ 'm.yaml': MANIFEST, 'p.cedar': PERMIT_ALL, 'c.json': { task: { id: 'T-9', allowed: ['ok@example.com'] } } });
  const record = join(tempDir(), 'record.jsonl');
  const home = makeHome();
  const g = await startGate({ home, manifest: f['m.yaml'], policy: f['p.cedar'], context: f['c.json'], upstream: [process.execPath, helperScript('upstream.js')], env: { RECORD_LINES: record } });
  const errors: string[] = [];
  const attempt = async (name: string, args: Record<string, unknown>) => {
    try {
      return await g.client.callTool({ name, arguments: args });
    } catch (e) {
      assert.ok(e instanceof McpError);
      errors.push(JSON.stringify({ message: e.message, data: e.data }));
      return null;
    }
  };
  const allowed = await attempt('echo', { text: CANARY });
  assert.ok(allowed && !allowed.isError);
  await attempt('echo', { text: CANARY.repeat(10) }); // argument_invalid (max_len)
  await attempt('echo', { to: `${CANARY}@evil.example` }); // scope_mismatch
  await attempt('echo', { code: CANARY }); // argument_invalid (pattern)
  await attempt('echo', { [CANARY]: 1 }); // undeclared_argument: the name itself is the canary
  await attempt(CANARY, {}); // undeclared_tool: the tool name is the canary
  await g.close();

  // Positive control: the canary did reach the tool, exactly once (only the allowed call).
  const upstreamSaw = readFileSync(record, 'utf8');
  assert.equal(upstreamSaw.split(CANARY).length - 1, 1);

  assert.equal(errors.length, 5);
  for (const e of errors) assert.ok(!e.includes(CANARY), `error leaks the canary: ${e}`);
  assert.ok(!g.stderr().includes(CANARY), 'gate stderr');
  for (const file of readdirSync(home)) {
    const p = join(home, file);
    if (file.endsWith('.db') || file.endsWith('-wal') || file.endsWith('-shm')) {
      assert.ok(!readFileSync(p).includes(Buffer.from(CANARY)), `${file} holds the canary`);
    }
  }
  const shown = cloakpipe(['ledger', 'show', '--home', home, '--json']).stdout;
  assert.ok(!shown.includes(CANARY));
  // Digests stand in for the values.
  const decisions = shown.trim().split('\n').map((l) => JSON.parse(l)).filter((e) => e.kind === 'decision');
  assert.equal(decisions.length, 6);
  for (const d of decisions) {
    assert.match(d.args_digest, /^sha256:[0-9a-f]{64}$/);
    assert.match(d.fingerprint, /^sha256:[0-9a-f]{64}$/);
  }
  assert.ok(existsSync(join(home, 'ledger.db')));
});
