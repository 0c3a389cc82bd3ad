// A raw stdio MCP server that floods its host: tool `flood` sends `count` notifications/message
// of `bytes` characters each, writing the next only when its stdout takes more (as a server
// should), then answers the call. It counts what it sent; a ping's answer says how many.
import { createInterface } from 'node:readline';

const send = (m: unknown): boolean => process.stdout.write(JSON.stringify(m) + '\n');
let sent = 0;

async function flood(id: unknown, count: number, bytes: number): Promise<void> {
  const data = 'f'.repeat(bytes);
  for (let n = 0; n < count; n++) {
    sent++;
    if (!send({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: { n, data } } }))
      await new Promise((r) => process.stdout.once('drain', r));
  }
  send({ jsonrpc: '2.0', id, result: { content: [{ type: 'text', text: `flooded ${count}` }] } });
}

createInterface({ input: process.stdin }).on('line', (line) => {
  const m = JSON.parse(line) as { id?: unknown; method?: string; params?: any };
  if (m.id === undefined) return;
  if (m.method === 'initialize')
    return send({ jsonrpc: '2.0', id: m.id, result: { protocolVersion: m.params.protocolVersion, capabilities: { tools: {}, logging: {} }, serverInfo: { name: 'flooding', version: '1' } } });
  if (m.method === 'ping') return send({ jsonrpc: '2.0', id: m.id, result: { _meta: { sent } } });
  if (m.method === 'tools/call' && m.params?.name === 'flood') return void flood(m.id, m.params.arguments.count, m.params.arguments.bytes);
  send({ jsonrpc: '2.0', id: m.id, error: { code: -32601, message: 'method not found' } });
});
