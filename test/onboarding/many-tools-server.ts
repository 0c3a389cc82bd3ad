// A raw stdio MCP server that lists argv[2] tools on one tools/list page, each as small as a tool
// can be (a name and an empty object schema), so a page of 130,000 stays under the 10 MiB a line
// may take.
import { createInterface } from 'node:readline';

const count = Number(process.argv[2]);
const send = (m: unknown) => process.stdout.write(JSON.stringify(m) + '\n');

createInterface({ input: process.stdin }).on('line', (line) => {
  const m = JSON.parse(line) as { id?: number; method?: string; params?: { protocolVersion?: string } };
  if (m.id === undefined) return;
  if (m.method === 'initialize') return send({ jsonrpc: '2.0', id: m.id, result: { protocolVersion: m.params?.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'many', version: '1' } } });
  if (m.method === 'tools/list') return send({ jsonrpc: '2.0', id: m.id, result: { tools: Array.from({ length: count }, (_, i) => ({ name: `t${i}`, inputSchema: { type: 'object' } })) } });
  send({ jsonrpc: '2.0', id: m.id, error: { code: -32601, message: 'method not found' } });
});
