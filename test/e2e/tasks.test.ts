// Task-augmented tools/call (MCP 2025-11-25) through the real binary: the official SDK client's
// task stream against @modelcontextprotocol/server-everything's simulate-research-query, a
// write tool the server runs as a task, over stdio and through the HTTP door. The server answers the call with a task at once and
// the result comes with a later tasks/result, so the call's record must be that result: the
// operation pending until it comes, the session label raised by it, and outcome unknown (never
// "ok") when the host ends before fetching it while the task works; once the server said it
// completed, the gate fetches the result itself (ADR 054). A stored result replayed to such a
// call comes as a completed task the gate made, which the SDK's task stream reads. A task the
// host cancels ends its call unknown (it may have partly run), never failed (ADR 050). Calls
// sent with a task have a bound of their own (ADR 051).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { EVERYTHING, makeHome, writeFiles, cloakpipe } from '../helpers/cli.js';
import { call, startGate, type RunningGate } from '../helpers/gate.js';
import { httpClient, startHttpGate } from '../helpers/http-gate.js';
import { digestJson } from '../../src/core/digest.js';

const MANIFEST = `version: 1
release: tasks-test@1
tools:
  simulate-research-query:
    effect: write
    returns: confidential
    accepts: confidential
    arguments:
      topic: { type: string, max_len: 200, required: true }
      ambiguous: { type: boolean }
  echo:
    effect: read
    accepts: public
    arguments:
      message: { type: string, max_len: 200, required: true }
`;
const POLICY = `@id("all-declared") permit (principal, action == Action::"call_tool", resource);\n`;

let files: Record<string, string>;
let direct: Client;

before(async () => {
  files = writeFiles({ 'm.yaml': MANIFEST, 'p.cedar': POLICY, 'c.json': { task: { id: 'T-1' } } });
  direct = new Client({ name: 'direct', version: '1' });
  await direct.connect(new StdioClientTransport({ command: process.execPath, args: [EVERYTHING, 'stdio'], stderr: 'ignore' }));
  await direct.listTools(); // the SDK sends a task only for a tool it knows needs one
});

after(async () => {
  await direct?.close();
});

async function gate(flags: string[] = [], home = makeHome()): Promise<{ g: RunningGate; home: string }> {
  const g = await startGate({ home, manifest: files['m.yaml'], policy: files['p.cedar'], context: files['c.json'], flags, upstream: [process.execPath, EVERYTHING, 'stdio'] });
  await g.client.listTools();
  return { g, home };
}

const ledger = (home: string) => cloakpipe(['ledger', 'show', '--home', home, '--json']).stdout.trim().split('\n').map((l) => JSON.parse(l));
const operations = (home: string) => cloakpipe(['ops', 'list', '--home', home, '--json']).stdout.trim().split('\n').filter(Boolean).map((l) => JSON.parse(l));

type Message = { type: string; task?: { taskId: string; status: string }; result?: any; error?: unknown };

/** The SDK's task stream for one research query; `onCreated` runs when the task came back. */
async function research(client: Client, topic: string, onCreated: (m: Message) => void = () => undefined, operation?: string): Promise<Message[]> {
  const out: Message[] = [];
  const meta = operation ? { _meta: { 'cloakpipe/operation_id': operation } } : {};
  for await (const m of client.experimental.tasks.callToolStream({ name: 'simulate-research-query', arguments: { topic }, ...meta })) {
    out.push(m as Message);
    if (m.type === 'taskCreated') onCreated(m as Message);
  }
  return out;
}

/** A result with its task id taken out (each run is a new task). */
const withoutTask = (r: any) => JSON.parse(JSON.stringify(r).replaceAll(/[0-9a-f]{32}/g, 'TASK'));

test('a call answered with a task: the host gets what the server sends; the record is the result the task brought, not its creation', async () => {
  const straight = await research(direct, 'tide tables');
  const { g, home } = await gate();
  let pendingWhileWorking: unknown[] = [];
  let entriesWhileWorking: any[] = [];
  let again: Promise<Message[]> | undefined;
  const gated = await research(
    g.client,
    'tide tables',
    () => {
      pendingWhileWorking = operations(home).map((o: any) => o.state);
      entriesWhileWorking = ledger(home);
      again = research(g.client, 'tide tables', undefined, 'tide-1'); // the same write while its task works
    },
    'tide-1',
  );
  const retried = await again!;
  assert.deepEqual(retried.map((m) => m.type), ['error']);
  assert.equal((retried[0].error as { data?: { reason?: string } }).data?.reason, 'reconcile_before_retry', 'in flight: not answered from a stored task');
  assert.deepEqual(gated.map((m) => m.type), ['taskCreated', ...gated.slice(1, -1).map(() => 'taskStatus'), 'result']);
  assert.equal(gated.at(-2)?.task?.status, 'completed');
  const result = gated.at(-1)!.result;
  assert.deepEqual(withoutTask(result), withoutTask(straight.at(-1)!.result), 'the result is the one the server gives straight');
  // The same write once it succeeded is answered from the operation's store with the task's
  // result (its task id and all), as a completed task the gate made: not the stored task of
  // the first run, and the tool does not run again.
  const replayed = await research(g.client, 'tide tables', undefined, 'tide-1');
  assert.deepEqual(replayed.map((m) => m.type), ['taskCreated', ...replayed.slice(1, -1).map(() => 'taskStatus'), 'result']);
  assert.ok(replayed.slice(0, -1).every((m) => m.task?.status === 'completed' && m.task.taskId === replayed[0].task?.taskId));
  assert.notEqual(replayed[0].task?.taskId, gated[0].task?.taskId);
  assert.deepEqual(replayed.at(-1)!.result, result);
  // While the task worked: decided, the write operation pending, no result recorded yet.
  assert.deepEqual(pendingWhileWorking, ['pending']);
  assert.deepEqual(entriesWhileWorking.filter((e) => e.kind === 'result'), []);
  await g.close();
  const entries = ledger(home);
  const decision = entries.find((e) => e.kind === 'decision' && e.tool === 'simulate-research-query');
  const results = entries.filter((e) => e.kind === 'result');
  assert.equal(results.length, 1);
  assert.equal(results[0].decision, decision.seq);
  assert.equal(results[0].outcome, 'ok');
  assert.equal(results[0].result_digest, digestJson(result), 'the digest of what the task brought the host');
  assert.notEqual(results[0].result_digest, digestJson({ task: gated[0].task }));
  assert.deepEqual(operations(home).map((o: any) => o.state), ['succeeded']);
  const decisions = entries.filter((e) => e.kind === 'decision').map((e) => [e.outcome, e.reason ?? null]);
  assert.deepEqual(decisions, [['allow', null], ['refuse', 'reconcile_before_retry'], ['replay', null]], JSON.stringify(decisions));
  assert.equal(cloakpipe(['verify', '--home', home]).status, 0);
});

test("the task's result raises the session label by the tool's returns: a public sink is refused after it", async () => {
  const { g, home } = await gate();
  assert.equal((await call(g, 'echo', { message: 'before' })).ok, true);
  await research(g.client, 'reef survey');
  const after = await call(g, 'echo', { message: 'after' });
  assert.equal(after.ok, false);
  assert.equal(!after.ok && after.reason, 'sink_ceiling_exceeded');
  await g.close();
  const label = ledger(home).find((e) => e.kind === 'label');
  assert.deepEqual([label.from, label.to, label.cause], ['public', 'confidential', 'returns']);
});

test('the host ends before it fetches the result: the call ends outcome unknown, never ok', async () => {
  const { g, home } = await gate();
  const created = await new Promise<Message>((resolve, reject) => {
    research(g.client, 'deep sea', resolve).catch(reject);
  });
  assert.equal(created.task?.status, 'working');
  await g.close(); // the host is gone; the task may still finish on the server
  const results = ledger(home).filter((e) => e.kind === 'result');
  assert.deepEqual(results.map((e) => [e.outcome, e.why]), [['unknown', 'error']]);
  assert.deepEqual(operations(home).map((o: any) => o.state), ['unknown']);
});

test('the host ends after the server said its task completed, before fetching the result: the gate fetches it, the write succeeded, and the same write replays the result the server gives straight', async () => {
  const straight = await research(direct, 'salt marsh');
  const { g, home } = await gate();
  const stream = g.client.experimental.tasks.callToolStream({ name: 'simulate-research-query', arguments: { topic: 'salt marsh' }, _meta: { 'cloakpipe/operation_id': 'marsh-1' } });
  for await (const m of stream) if (m.type === 'taskStatus' && m.task.status === 'completed') break; // before the SDK fetches the result
  await g.close();
  assert.deepEqual(ledger(home).filter((e) => e.kind === 'result').map((e) => [e.outcome, e.why ?? null]), [['ok', null]]);
  assert.deepEqual(operations(home).map((o: any) => o.state), ['succeeded']);
  const later = await gate([], home);
  const replayed = await research(later.g.client, 'salt marsh', undefined, 'marsh-1');
  await later.g.close();
  assert.deepEqual(withoutTask(replayed.at(-1)!.result), withoutTask(straight.at(-1)!.result), 'the stored result is the one the server gives');
  assert.equal(cloakpipe(['verify', '--home', home]).status, 0);
});

/** A research query whose task the host cancels once it came back, and the error of fetching its result after. */
async function cancelledResearch(client: Client, topic: string, operation?: string): Promise<{ stream: Message[]; fetched: unknown }> {
  let cancelled: Promise<unknown> | undefined;
  const stream = await research(client, topic, (m) => (cancelled = client.experimental.tasks.cancelTask(m.task!.taskId)), operation);
  await cancelled;
  const fetched = await client.experimental.tasks.getTaskResult(stream[0].task!.taskId).then(
    () => assert.fail('a cancelled task has no result'),
    (e: { code?: number; message?: string }) => withoutTask({ code: e.code, message: e.message }),
  );
  return { stream, fetched };
}

test('the host cancels the task while it works: the call ends outcome unknown (cancelled) at once, never failed, and the same write is reconcile_before_retry', async () => {
  const straight = await cancelledResearch(direct, 'kelp forests');
  const { g, home } = await gate();
  const gated = await cancelledResearch(g.client, 'kelp forests', 'kelp-1');
  assert.equal(gated.stream.at(-1)?.type, 'error', 'the SDK reports the cancelled task');
  assert.equal(straight.stream.at(-1)?.type, 'error');
  const end = (s: Message[]) => withoutTask({ type: s.at(-1)?.type, message: (s.at(-1)?.error as Error | undefined)?.message });
  assert.deepEqual(end(gated.stream), end(straight.stream), 'the stream ends as it does straight to the server');
  // Fetching the cancelled task's result: the server's error reaches the host as it comes
  // straight; the record stays.
  assert.deepEqual(gated.fetched, straight.fetched);
  const again = await research(g.client, 'kelp forests', undefined, 'kelp-1');
  assert.equal((again[0].error as { data?: { reason?: string } }).data?.reason, 'reconcile_before_retry', 'it may have partly run: not run again');
  const whileRunning = ledger(home).filter((e) => e.kind === 'result').map((e) => [e.outcome, e.why]);
  await g.close();
  assert.deepEqual(whileRunning, [['unknown', 'cancelled']], 'recorded before the host ended');
  assert.deepEqual(operations(home).map((o: any) => o.state), ['unknown']);
  assert.equal(cloakpipe(['verify', '--home', home]).status, 0);
});

test('calls sent with a task are bounded by --max-in-flight apart from requests: one more is refused too_many_tasks, the host goes on, and the finished task frees its place', async () => {
  const { g, home } = await gate(['--max-in-flight', '1']);
  let second: Promise<Message[]> | undefined;
  let echoed: ReturnType<typeof call> | undefined;
  const first = await research(g.client, 'sea ice', () => {
    second = research(g.client, 'sea ice');
    echoed = call(g, 'echo', { message: 'while it works' });
  });
  assert.equal(first.at(-1)?.type, 'result');
  const refused = await second!;
  assert.deepEqual(refused.map((m) => m.type), ['error']);
  assert.match((refused[0].error as Error).message, /cloakpipe refused: too_many_tasks: 1 calls sent with a task are open/);
  assert.equal((await echoed!).ok, true, 'the host is still read while the task works');
  const third = await research(g.client, 'sea ice');
  assert.equal(third.at(-1)?.type, 'result', 'the settled call freed its place');
  await g.close();
  const decisions = ledger(home).filter((e) => e.kind === 'decision').map((e) => [e.tool ?? null, e.outcome, e.reason ?? null]);
  assert.deepEqual(decisions.map(String).sort(), [
    ['simulate-research-query', 'allow', null],
    [null, 'refuse', 'too_many_tasks'],
    ['echo', 'allow', null],
    ['simulate-research-query', 'allow', null],
  ].map(String).sort());
  assert.equal(cloakpipe(['verify', '--home', home]).status, 0);
});

test('over the HTTP door too: the task comes back at once, its result is the record, the operation settles with it', async () => {
  const home = makeHome();
  const door = await startHttpGate({ home, manifest: files['m.yaml'], policy: files['p.cedar'], flags: ['--context', files['c.json']], upstream: [process.execPath, EVERYTHING, 'stdio'] });
  const client = await httpClient(door.url);
  await client.listTools();
  let pendingWhileWorking: unknown[] = [];
  const gated = await research(client, 'tide tables', () => (pendingWhileWorking = operations(home).map((o: any) => o.state)));
  assert.equal(gated.at(-1)?.type, 'result');
  await client.close();
  assert.equal(await door.stop(), 0, door.stderr());
  assert.deepEqual(pendingWhileWorking, ['pending']);
  const results = ledger(home).filter((e) => e.kind === 'result');
  assert.deepEqual(results.map((e) => [e.outcome, e.result_digest]), [['ok', digestJson(gated.at(-1)!.result)]]);
  assert.deepEqual(operations(home).map((o: any) => o.state), ['succeeded']);
});

test('the gate killed (SIGKILL) while the task works: no result was recorded, and the restarted gate makes the operation unknown', async () => {
  const { g, home } = await gate();
  const created = await new Promise<Message>((resolve, reject) => {
    research(g.client, 'storm tracks', resolve).catch(reject);
  });
  assert.equal(created.task?.status, 'working');
  process.kill(g.pid, 'SIGKILL');
  await g.exited;
  assert.deepEqual(ledger(home).filter((e) => e.kind === 'result'), []);
  const restarted = await startGate({ home, manifest: files['m.yaml'], policy: files['p.cedar'], context: files['c.json'], upstream: [process.execPath, EVERYTHING, 'stdio'] });
  await restarted.close();
  assert.deepEqual(operations(home).map((o: any) => o.state), ['unknown']);
  assert.ok(!ledger(home).some((e) => e.kind === 'result' && e.outcome === 'ok'));
  assert.equal(cloakpipe(['verify', '--home', home]).status, 0);
});
