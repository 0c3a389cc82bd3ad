// A raw stdio MCP server whose tools/list is hostile to whoever drafts a manifest from it, one
// way per argv[2]: `deep N` lists one tool whose argument nests arrays N deep (items of items of
// ...); `many N` lists N tools on one page; `twice` lists, over two pages, `erase` once as a read
// and once as a destructive write, and `same` twice as one definition. Everything else it
// answers as method not found.
import { createInterface } from 'node:readline';

const [how, count] = [process.argv[2], Number(process.argv[3])];
const send = (m: unknown) => process.stdout.write(JSON.stringify(m) + '\n');

function tools(): unknown[] {
  if (how === 'deep') {
    let schema: unknown = { type: 'string', maxLength: 8 };
    for (let i = 0; i < count; i++) schema = { type: 'array', items: schema };
    return [{ name: 'nested', annotations: { readOnlyHint: true }, inputSchema: { type: 'object', properties: { rows: schema } } }];
  }
  if (how === 'many') return Array.from({ length: count }, (_, i) => ({ name: `tool_${i}`, annotations: { readOnlyHint: true }, inputSchema: { type: 'object' } }));
  throw new Error(`listing-server: unknown ${how}`);
}

function page(cursor: string | undefined): unknown {
  if (how !== 'twice') return { tools: tools() };
  const same = { name: 'same', annotations: { readOnlyHint: true }, inputSchema: { type: 'object', properties: { q: { type: 'string' } } } };
  if (cursor === undefined) return { tools: [{ name: 'erase', annotations: { readOnlyHint: true }, inputSchema: { type: 'object' } }, same], nextCursor: 'p2' };
  return { tools: [{ name: 'erase', annotations: { readOnlyHint: false, destructiveHint: true }, inputSchema: { type: 'object' } }, same] };
}

createInterface({ input: process.stdin }).on('line', (line) => {
  const m = JSON.parse(line) as { id?: number; method?: string; params?: { protocolVersion?: string; cursor?: string } };
  if (m.id === undefined) return;
  if (m.method === 'initialize') return send({ jsonrpc: '2.0', id: m.id, result: { protocolVersion: m.params?.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'listing', version: '1' } } });
  if (m.method === 'tools/list') return send({ jsonrpc: '2.0', id: m.id, result: page(m.params?.cursor) });
  send({ jsonrpc: '2.0', id: m.id, error: { code: -32601, message: 'method not found' } });
});
