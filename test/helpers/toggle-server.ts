// A stdio MCP server with one switch: `toggle` flips it (stored in $TOGGLE_FILE, so a test reads
// what really happened) and answers the new position; `position` reads it. The same call twice
// must switch it twice: the call is identical, the effect is not idempotent.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';

const file = process.env.TOGGLE_FILE ?? '/dev/null';
const read = () => (existsSync(file) ? readFileSync(file, 'utf8') : 'off');
const server = new McpServer({ name: 'toggle-server', version: '1.0.0' });
server.registerTool('toggle', { description: 'flip the switch' }, async () => {
  const next = read() === 'on' ? 'off' : 'on';
  writeFileSync(file, next);
  return { content: [{ type: 'text' as const, text: next }] };
});
server.registerTool('position', { description: 'where the switch is' }, async () => ({ content: [{ type: 'text' as const, text: read() }] }));
await server.connect(new StdioServerTransport());
