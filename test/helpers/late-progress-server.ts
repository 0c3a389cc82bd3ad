// A raw stdio MCP server that sends progress after its request ended, on purpose: `answered`
// sends progress, its answer, then progress again; `unanswered` sends progress and never
// answers, and sends progress again when the request is cancelled (by the host, or by the gate
// giving up). After each late progress it sends a log message (`after`), so a host knows
// everything before it has been passed on or dropped.
import { createInterface } from 'node:readline';

const out = (m: object) => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', ...m }) + '\n');
const progress = (progressToken: unknown, progress: number) => out({ method: 'notifications/progress', params: { progressToken, progress } });
const after = (data: string) => out({ method: 'notifications/message', params: { level: 'info', data } });
const tokens = new Map<string, unknown>(); // unanswered calls: their id's key → progress token
const tool = (name: string) => ({ name, inputSchema: { type: 'object', properties: {} } });

createInterface({ input: process.stdin }).on('line', (line) => {
  const m = JSON.parse(line);
  if (m.method === 'initialize') return out({ id: m.id, result: { protocolVersion: m.params.protocolVersion, capabilities: { tools: {}, logging: {} }, serverInfo: { name: 'late-progress', version: '1' } } });
  if (m.method === 'tools/list') return out({ id: m.id, result: { tools: [tool('answered'), tool('unanswered')] } });
  if (m.method === 'ping') return out({ id: m.id, result: {} });
  if (m.method === 'notifications/cancelled') {
    const key = JSON.stringify(m.params.requestId);
    if (!tokens.has(key)) return;
    progress(tokens.get(key), 2);
    tokens.delete(key);
    return after('after-cancel');
  }
  if (m.method !== 'tools/call') return;
  const token = m.params._meta?.progressToken;
  progress(token, 1);
  if (m.params.name === 'unanswered') return void tokens.set(JSON.stringify(m.id), token);
  out({ id: m.id, result: { content: [{ type: 'text', text: 'done' }] } });
  progress(token, 2);
  after('after-answer');
});
