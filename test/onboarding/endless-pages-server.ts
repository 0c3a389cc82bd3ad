// A raw stdio MCP server whose tools/list never ends: every page holds one tool with a 512 KiB
// description and a new cursor. Counts the pages it served in argv[2].
import { createInterface } from 'node:readline';
import { writeFileSync } from 'node:fs';

const countFile = process.argv[2];
const send = (m: unknown) => process.stdout.write(JSON.stringify(m) + '\n');
let pages = 0;

createInterface({ input: process.stdin }).on('line', (line) => {
  const m = JSON.parse(line) as { id?: number; method?: string; params?: { protocolVersion?: string } };
  if (m.id === undefined) return;
  if (m.method === 'initialize') return send({ jsonrpc: '2.0', id: m.id, result: { protocolVersion: m.params?.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'endless', version: '1' } } });
  if (m.method === 'tools/list') {
    writeFileSync(countFile, String(++pages));
    return send({ jsonrpc: '2.0', id: m.id, result: { tools: [{ name: `t${pages}`, description: 'd'.repeat(512 * 1024), inputSchema: { type: 'object' } }], nextCursor: `page-${pages}` } });
  }
  send({ jsonrpc: '2.0', id: m.id, error: { code: -32601, message: 'method not found' } });
});
