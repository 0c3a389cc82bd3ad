// A stdio MCP server built on the official SDK whose tool `wait` runs until the host cancels it:
// the SDK aborts the handler's signal on notifications/cancelled. CANCEL_FILE, when set, gets a
// line `started N` when the call with argument n = N begins, `cancelled N` when its signal aborts.
import { appendFileSync } from 'node:fs';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';

const note = (line: string) => {
  if (process.env.CANCEL_FILE) appendFileSync(process.env.CANCEL_FILE, `${line}\n`);
};

const server = new McpServer({ name: 'cancel-recording', version: '1' }, { capabilities: { tools: {} } });

server.registerTool('wait', { description: 'runs until cancelled', inputSchema: { n: z.number() } }, ({ n }, extra) => {
  note(`started ${n}`);
  return new Promise((resolve) => {
    extra.signal.addEventListener('abort', () => {
      note(`cancelled ${n}`);
      resolve({ content: [{ type: 'text', text: 'cancelled' }] });
    });
  });
});

await server.connect(new StdioServerTransport());
