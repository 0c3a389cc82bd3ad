// A raw stdio MCP server with one tool whose argument is named `__proto__` (a name a schema may
// well hold: JSON has no reserved keys). Its tools/list is written as text, since an object
// literal with that key sets a prototype instead. tools/call answers with the argument names it
// received, as the line arrived (JSON.parse keeps `__proto__` as an own key).
import { createInterface } from 'node:readline';

const send = (line: string) => process.stdout.write(line + '\n');
const LIST = '{"tools":[{"name":"set_option","annotations":{"readOnlyHint":true},"inputSchema":{"type":"object","properties":{"__proto__":{"type":"string","maxLength":8},"scope":{"type":"string","enum":["user","project"]}},"required":["__proto__"]}}]}';

createInterface({ input: process.stdin }).on('line', (line) => {
  const m = JSON.parse(line) as { id?: number | string; method?: string; params?: { protocolVersion?: string; arguments?: object } };
  if (m.id === undefined) return;
  const id = JSON.stringify(m.id);
  if (m.method === 'initialize') return send(`{"jsonrpc":"2.0","id":${id},"result":${JSON.stringify({ protocolVersion: m.params?.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'proto', version: '1' } })}}`);
  if (m.method === 'tools/list') return send(`{"jsonrpc":"2.0","id":${id},"result":${LIST}}`);
  if (m.method === 'tools/call') return send(`{"jsonrpc":"2.0","id":${id},"result":${JSON.stringify({ content: [{ type: 'text', text: `got ${Object.keys(m.params?.arguments ?? {}).join(',')}` }] })}}`);
  send(`{"jsonrpc":"2.0","id":${id},"error":{"code":-32601,"message":"method not found"}}`);
});
