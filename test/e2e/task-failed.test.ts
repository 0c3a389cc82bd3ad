// A task that fails on its own, through the real binary, with the official SDK on both sides: a
// server whose write tool `refund` always runs as a task that ends `failed` (failing-task-server),
// and the SDK client's task stream, which never fetches a failed task's result. The gate fetches
// it itself (ADR 052): the call settles `failed` with the result the server holds, its operation
// may run again, and the host sees what it sees straight to the server.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { makeHome, writeFiles, cloakpipe, helperScript, tempDir } from '../helpers/cli.js';
import { startGate } from '../helpers/gate.js';
import { digestJson } from '../../src/core/digest.js';

const MANIFEST = `version: 1
release: task-failed-test@1
tools:
  refund:
    effect: write
    arguments:
      order: { type: string, max_len: 40, required: true }
`;
const POLICY = `@id("all-declared") permit (principal, action == Action::"call_tool", resource);\n`;
const SERVER = [process.execPath, helperScript('failing-task-server.js')];

let files: Record<string, string>;
let direct: Client;

before(async () => {
  files = writeFiles({ 'm.yaml': MANIFEST, 'p.cedar': POLICY });
  direct = new Client({ name: 'direct', version: '1' });
  await direct.connect(new StdioClientTransport({ command: SERVER[0], args: SERVER.slice(1), stderr: 'ignore' }));
  await direct.listTools(); // the SDK sends a task only for a tool it knows needs one
});

after(async () => {
  await direct?.close();
});

type Message = { type: string; task?: { taskId: string; status: string }; error?: unknown };

async function refund(client: Client, order: string, operation?: string): Promise<Message[]> {
  const out: Message[] = [];
  const meta = operation ? { _meta: { 'cloakpipe/operation_id': operation } } : {};
  for await (const m of client.experimental.tasks.callToolStream({ name: 'refund', arguments: { order }, ...meta })) out.push(m as Message);
  return out;
}

/** What a host reads of a stream: the message types in order (the polls collapsed) and its end, task ids taken out. */
const shape = (s: Message[]) =>
  JSON.parse(JSON.stringify({ types: s.map((m) => m.type).filter((t, i, a) => t !== a[i - 1]), end: (s.at(-1)?.error as Error | undefined)?.message }).replaceAll(/[0-9a-f-]{32,36}/g, 'TASK'));

test("a task that fails on its own settles its call failed with the server's result, fetched by the gate once; the host sees what it sees straight to the server, and the same write may run again", async () => {
  const straight = await refund(direct, 'A-1');
  const home = makeHome();
  const fetches = join(tempDir(), 'fetches');
  const g = await startGate({ home, manifest: files['m.yaml'], policy: files['p.cedar'], flags: ['--call-timeout', '60s'], upstream: SERVER, env: { TASK_RESULTS_FILE: fetches } });
  await g.client.listTools();
  const gated = await refund(g.client, 'A-1', 'refund-1');
  assert.deepEqual(shape(gated), shape(straight));
  assert.equal(gated.at(-2)?.task?.status, 'failed');
  const ledger = () => cloakpipe(['ledger', 'show', '--home', home, '--json']).stdout.trim().split('\n').map((l) => JSON.parse(l));
  let results: any[] = [];
  for (let i = 0; i < 400 && results.length === 0; i++) { // well inside --call-timeout 60s
    await new Promise((r) => setTimeout(r, 50));
    results = ledger().filter((e) => e.kind === 'result');
  }
  assert.deepEqual(results.map((e) => e.outcome), ['ok'], 'settled while the session runs, not unknown at --call-timeout');
  assert.equal(readFileSync(fetches, 'utf8').trim().split('\n').length, 1, 'the gate fetched it once');
  const whileRunning = cloakpipe(['ops', 'list', '--home', home, '--json']).stdout.trim().split('\n').map((l) => JSON.parse(l).state);
  assert.deepEqual(whileRunning, ['failed'], 'the tool said isError: its write operation failed');
  // The result the host fetches now is the one recorded.
  const held = await g.client.experimental.tasks.getTaskResult(gated[0].task!.taskId, CallToolResultSchema);
  assert.equal(results[0].result_digest, digestJson(held as never));
  assert.equal((held as { isError?: boolean }).isError, true);
  // failed, not unknown: the same write with the same operation id runs again.
  const again = await refund(g.client, 'A-1', 'refund-1');
  assert.deepEqual(shape(again), shape(straight));
  await g.close();
  assert.deepEqual(g.hostErrors, [], "the gate's own request never reaches the host");
  const decisions = ledger().filter((e) => e.kind === 'decision').map((e) => e.outcome);
  assert.deepEqual(decisions, ['allow', 'allow'], 'not reconcile_before_retry');
  assert.equal(cloakpipe(['verify', '--home', home]).status, 0);
});
