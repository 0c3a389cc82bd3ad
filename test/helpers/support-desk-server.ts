// A small support desk as a stdio MCP server (the SDK's McpServer), with the tools of
// examples/support-agent.yaml and one more (list_orders). Every call a tool runs is appended to
// $RECORD_FILE (one JSON line: tool, arguments, pid) before it answers: the upstream's own record
// of what arrived through the gate.
import { appendFileSync } from 'node:fs';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';

const record = process.env.RECORD_FILE;

function ran(tool: string, args: Record<string, unknown>, text: string) {
  if (record) appendFileSync(record, JSON.stringify({ tool, arguments: args, pid: process.pid }) + '\n');
  return { content: [{ type: 'text' as const, text }] };
}

const server = new McpServer({ name: 'support-desk', version: '1.0.0' });
server.registerTool(
  'lookup_customer',
  { description: 'look up a customer record', inputSchema: { customer_id: z.string() } },
  (args) => ran('lookup_customer', args, `customer ${args.customer_id}: Ada Lovelace, ada@example.com`),
);
server.registerTool(
  'list_orders',
  { description: "list a customer's orders", inputSchema: { customer_id: z.string(), limit: z.number().int().optional() } },
  (args) => ran('list_orders', args, 'O100001, O100002'),
);
server.registerTool(
  'send_email',
  {
    description: 'email the customer',
    inputSchema: { to: z.string(), subject: z.string().optional(), body: z.string().optional(), idempotency_key: z.string().optional() },
  },
  (args) => ran('send_email', args, `sent to ${args.to}`),
);
server.registerTool(
  'issue_refund',
  { description: 'refund an order', inputSchema: { order_id: z.string(), amount: z.number(), idempotency_key: z.string().optional() } },
  (args) => ran('issue_refund', args, `refunded ${args.order_id}`),
);

await server.connect(new StdioServerTransport());
