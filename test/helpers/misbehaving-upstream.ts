// A raw MCP stdio server that misbehaves on purpose, one way per tool, to prove what the gate
// lets through from the upstream's side (product.md 7a). Every reply it writes is a line the
// gate must parse strictly and re-serialize, or drop. Its pid goes to $PID_FILE; SIGUSR1 makes
// it answer, unasked, the id after the last tools/call it saw (a made-up "success").
// $KEEP_ALIVE: it stays after its stdin ends; $IGNORE_SIGTERM: it stays after SIGTERM too.
// Tool `slow` answers after 100 ms; the most calls it ever held unanswered goes to $PEAK_FILE.
// Tool `gather` holds its calls until none has come for 500 ms, then answers them all: what it
// held at most (goes to $PEAK_FILE too) is what the gate let through at once.
// Tool `same_task` answers every call with the same task (id task-reused), whose tasks/result
// is a result with the canary. Tool `cancelled_task` answers with task `task-<how>` (its `how`
// argument), which the server reports cancelled in one of the ways MCP has: a status notification
// (`status`), its tasks/get (`get`) or tasks/list (`list`) reply, or (`late`) a tasks/cancel whose
// reply it holds until it answered the task's tasks/result with an error; for `finished` it
// refuses the cancel (the task had ended) and its tasks/result is a result. Tool `lasting_task`
// answers call N with task `lasting-N`, which works until the host's tasks/result fetches its
// result (its tasks/get says `completed`); `lasting_count` tells how many it made (what reached the server). Tool `failed_task`
// answers call N with task `failed-N` and then notifies, twice, that it failed; its tasks/result is the
// tool's error, and `fetched_count` tells how many such tasks/result requests it served;
// `failed_silent` does the same with task `silent-N`, whose tasks/result it never answers.
// `late_task` answers call N after 1.5 s with task `made-late-N`, which its tasks/cancel cancels.
// A resources/read of `hang:` is never answered; INIT_DELAY_MS delays the initialize answer.
// Tool `unended` writes its answer without the closing newline and exits (it died mid-write).
import { writeFileSync } from 'node:fs';
import { createInterface } from 'node:readline';

const CANARY = 'CANARY-upstream-9c1e';
if (process.env.PID_FILE) writeFileSync(process.env.PID_FILE, String(process.pid));
const out = (s: string | Buffer) => process.stdout.write(s);
const ok = (id: unknown, text: string) => JSON.stringify({ jsonrpc: '2.0', id, result: { content: [{ type: 'text', text }] } });
let lastCall = 0;

// For 3 s, every millisecond: whenever the host sends that id, a forged answer is close behind.
process.on('SIGUSR1', () => {
  const spray = setInterval(() => out(ok(lastCall + 1, `forged ${CANARY}`) + '\n'), 1);
  setTimeout(() => clearInterval(spray), 3000);
});
process.on('SIGTERM', () => {
  if (process.env.IGNORE_SIGTERM) return; // a server that will not leave on SIGTERM
  process.exit(0);
});

const TOOLS = ['dup_result', 'dup_id', 'result_and_error', 'bom', 'batch', 'trailing', 'twice', 'spaced', 'arm', 'echo', 'hang', 'slow', 'same_task', 'cancelled_task', 'lasting_task', 'lasting_count', 'failed_task', 'fetched_count', 'failed_silent', 'late_task', 'gather', 'unended'];
const heldCancels = new Map<string, unknown>(); // task id → the id of its tasks/cancel, answered late
let lasting = 0;
let fetched = 0;
const task = (taskId: string, status: string) => {
  const at = new Date().toISOString();
  return { taskId, status, ttl: 60000, createdAt: at, lastUpdatedAt: at };
};
let outstanding = 0;
let peak = 0;
const gathered: unknown[] = [];
let gatherTimer: NodeJS.Timeout | undefined;
if (process.env.KEEP_ALIVE) setInterval(() => undefined, 1 << 30);

createInterface({ input: process.stdin }).on('line', (line) => {
  const m = JSON.parse(line);
  const id = m.id;
  if (m.method === 'initialize') {
    const answer = () => out(JSON.stringify({ jsonrpc: '2.0', id, result: { protocolVersion: m.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'misbehaving', version: '1' } } }) + '\n');
    return void setTimeout(answer, Number(process.env.INIT_DELAY_MS ?? 0));
  }
  if (m.method === 'tools/list') return out(JSON.stringify({ jsonrpc: '2.0', id, result: { tools: TOOLS.map((name) => ({ name, inputSchema: { type: 'object' } })) } }) + '\n');
  if (m.method === 'notifications/cancelled') return;
  if (m.method === 'resources/read' && m.params?.uri === 'hang:') return;
  if (m.method === 'tasks/result' && m.params?.taskId === 'task-reused') return out(ok(id, `task result ${CANARY}`) + '\n');
  if (m.method === 'tasks/result' && /^lasting-/.test(m.params?.taskId)) return out(ok(id, 'lasting') + '\n');
  if (m.method === 'tasks/get' && /^lasting-/.test(m.params?.taskId)) return out(JSON.stringify({ jsonrpc: '2.0', id, result: task(m.params.taskId, 'completed') }) + '\n');
  if (m.method === 'tasks/result' && /^silent-/.test(m.params?.taskId)) return;
  if (m.method === 'tasks/result' && /^failed-/.test(m.params?.taskId))
    return (fetched++, out(JSON.stringify({ jsonrpc: '2.0', id, result: { content: [{ type: 'text', text: `declined ${CANARY}` }], isError: true } }) + '\n'));
  if (m.method === 'tasks/get' && m.params?.taskId === 'task-get') return out(JSON.stringify({ jsonrpc: '2.0', id, result: task('task-get', 'cancelled') }) + '\n');
  if (m.method === 'tasks/list') return out(JSON.stringify({ jsonrpc: '2.0', id, result: { tasks: [task('task-list', 'cancelled')] } }) + '\n');
  if (m.method === 'tasks/cancel' && m.params?.taskId === 'task-late') return void heldCancels.set('task-late', id);
  if (m.method === 'tasks/cancel' && m.params?.taskId === 'task-finished')
    return out(JSON.stringify({ jsonrpc: '2.0', id, error: { code: -32602, message: 'Cannot cancel task in terminal status: completed' } }) + '\n');
  if (m.method === 'tasks/result' && m.params?.taskId === 'task-finished') return out(ok(id, 'finished') + '\n');
  if (m.method === 'tasks/cancel' && /^made-late-/.test(m.params?.taskId)) return out(JSON.stringify({ jsonrpc: '2.0', id, result: task(m.params.taskId, 'cancelled') }) + '\n');
  if (m.method === 'tasks/result' && m.params?.taskId === 'task-late') {
    out(JSON.stringify({ jsonrpc: '2.0', id, error: { code: -32603, message: 'Task task-late was cancelled' } }) + '\n');
    return out(JSON.stringify({ jsonrpc: '2.0', id: heldCancels.get('task-late'), result: task('task-late', 'cancelled') }) + '\n');
  }
  if (m.method !== 'tools/call') return id !== undefined ? out(JSON.stringify({ jsonrpc: '2.0', id, result: {} }) + '\n') : undefined;
  lastCall = typeof id === 'number' ? id : lastCall;
  const text = `${m.params.name} ${CANARY}`;
  switch (m.params.name) {
    case 'dup_result': // the ledger would record one value and the host see the other
      return out(`{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":{"content":[{"type":"text","text":"first ${CANARY}"}]},"result":{"content":[{"type":"text","text":"second ${CANARY}"}]}}\n`);
    case 'dup_id':
      return out(`{"jsonrpc":"2.0","id":${JSON.stringify(id)},"id":999,"result":{"content":[]}}\n`);
    case 'result_and_error':
      return out(`{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":{"content":[{"type":"text","text":"${CANARY}"}]},"error":{"code":1,"message":"x"}}\n`);
    case 'bom':
      return out(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(ok(id, text) + '\n')]));
    case 'batch':
      return out(`[${ok(id, text)}]\n`);
    case 'trailing':
      return out(`${ok(id, text)} {"garbage":true}\n`);
    case 'twice':
      return out(ok(id, 'first') + '\n' + ok(id, `second ${CANARY}`) + '\n');
    case 'spaced': // valid, but not in canonical form: key order, spaces, an escape
      return out(`{ "result" : { "content" : [ { "type":"text", "text":"\\u0041B" } ] }, "id" : ${JSON.stringify(id)}, "jsonrpc" : "2.0" }\n`);
    case 'hang':
      return;
    case 'same_task': {
      const at = new Date().toISOString();
      return out(JSON.stringify({ jsonrpc: '2.0', id, result: { task: { taskId: 'task-reused', status: 'working', ttl: 60000, createdAt: at, lastUpdatedAt: at } } }) + '\n');
    }
    case 'cancelled_task': {
      const taskId = `task-${m.params.arguments.how}`;
      out(JSON.stringify({ jsonrpc: '2.0', id, result: { task: task(taskId, 'working') } }) + '\n');
      if (taskId === 'task-status') setTimeout(() => out(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/tasks/status', params: task(taskId, 'cancelled') }) + '\n'), 30);
      return;
    }
    case 'lasting_task':
      lasting++;
      return out(JSON.stringify({ jsonrpc: '2.0', id, result: { task: task(`lasting-${id}`, 'working') } }) + '\n');
    case 'lasting_count':
      return out(ok(id, String(lasting)) + '\n');
    case 'failed_task':
      out(JSON.stringify({ jsonrpc: '2.0', id, result: { task: task(`failed-${id}`, 'working') } }) + '\n');
      // Said twice in one write: the second comes while the gate's fetch is in flight.
      return void setTimeout(() => out((JSON.stringify({ jsonrpc: '2.0', method: 'notifications/tasks/status', params: task(`failed-${id}`, 'failed') }) + '\n').repeat(2)), 30);
    case 'failed_silent':
      out(JSON.stringify({ jsonrpc: '2.0', id, result: { task: task(`silent-${id}`, 'working') } }) + '\n');
      return void setTimeout(() => out(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/tasks/status', params: task(`silent-${id}`, 'failed') }) + '\n'), 30);
    case 'late_task':
      return void setTimeout(() => out(JSON.stringify({ jsonrpc: '2.0', id, result: { task: task(`made-late-${id}`, 'working') } }) + '\n'), 1500);
    case 'fetched_count':
      return out(ok(id, String(fetched)) + '\n');
    case 'unended':
      return void process.stdout.write(ok(id, text), () => process.exit(0));
    case 'slow':
      peak = Math.max(peak, ++outstanding);
      if (process.env.PEAK_FILE) writeFileSync(process.env.PEAK_FILE, String(peak));
      return void setTimeout(() => {
        outstanding--;
        out(ok(id, 'slow') + '\n');
      }, 100);
    case 'gather':
      gathered.push(id);
      peak = Math.max(peak, gathered.length);
      if (process.env.PEAK_FILE) writeFileSync(process.env.PEAK_FILE, String(peak));
      clearTimeout(gatherTimer);
      return void (gatherTimer = setTimeout(() => out(gathered.splice(0).map((g) => ok(g, 'gathered') + '\n').join('')), 500));
    default:
      return out(ok(id, 'ok') + '\n');
  }
});
