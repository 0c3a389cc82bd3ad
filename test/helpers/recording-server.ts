// A tiny stdio MCP server built with the SDK's McpServer: its tools append each call they run
// to $RECORD_FILE (one JSON line: tool, arguments, pid) before acting, so a test can prove how
// many times a side effect happened. $RECORDER_MODE sets how a call behaves, without changing
// the call (and so its fingerprint): ok (default), slow ($RECORDER_DELAY_MS, default 300),
// hang (never answers), die (the process exits mid-call), fail (a result with isError).
import { appendFileSync } from 'node:fs';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';

const record = process.env.RECORD_FILE;
const mode = process.env.RECORDER_MODE ?? 'ok';
const delay = Number(process.env.RECORDER_DELAY_MS ?? 300);
let n = 0;

async function run(tool: string, args: Record<string, unknown>) {
  n += 1;
  if (record) appendFileSync(record, JSON.stringify({ tool, arguments: args, pid: process.pid }) + '\n');
  if (mode === 'die') process.exit(7);
  if (mode === 'hang') await new Promise(() => undefined);
  if (mode === 'slow') await new Promise((r) => setTimeout(r, delay));
  const text = `${tool} done #${n} by ${process.pid} at ${Date.now()}`;
  if (mode === 'fail') return { content: [{ type: 'text' as const, text: `failed: ${text}` }], isError: true };
  return { content: [{ type: 'text' as const, text }] };
}

const server = new McpServer({ name: 'recording-server', version: '1.0.0' });
server.registerTool(
  'send_email',
  { description: 'send an email', inputSchema: { to: z.string(), body: z.string().optional(), idempotency_key: z.string().optional() } },
  (args) => run('send_email', args),
);
server.registerTool(
  'write_note',
  { description: 'write a note', inputSchema: { text: z.string(), key: z.string().optional() } },
  (args) => run('write_note', args),
);
server.registerTool('read_note', { description: 'read', inputSchema: { text: z.string().optional() } }, async () => ({
  content: [{ type: 'text' as const, text: 'a note' }],
}));

await server.connect(new StdioServerTransport());
