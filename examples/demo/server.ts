// A small example MCP server for the demo: a support desk's customer lookup, an email sender
// and an internal note tool. It records nothing and calls nothing: it only answers.
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const TOOLS = [
  {
    name: 'lookup_customer',
    description: 'Look up a customer by id',
    inputSchema: { type: 'object', properties: { customer_id: { type: 'string' } }, required: ['customer_id'] },
  },
  {
    name: 'send_email',
    description: 'Send an email to a customer',
    inputSchema: {
      type: 'object',
      properties: { to: { type: 'string' }, subject: { type: 'string' }, body: { type: 'string' } },
      required: ['to'],
    },
  },
  {
    name: 'post_to_forum',
    description: 'Post a message on the public community forum',
    inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
  },
  {
    name: 'delete_account',
    description: 'Delete a customer account (the release does not declare it)',
    inputSchema: { type: 'object', properties: { customer_id: { type: 'string' } } },
  },
];

const server = new Server({ name: 'cloakpipe-demo-desk', version: '1.0.0' }, { capabilities: { tools: {} } });
server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: TOOLS }));
server.setRequestHandler(CallToolRequestSchema, async (req) => {
  const args = (req.params.arguments ?? {}) as Record<string, string>;
  switch (req.params.name) {
    case 'lookup_customer':
      return { content: [{ type: 'text', text: `customer ${args.customer_id}: Ada Lovelace, plan standard` }] };
    case 'send_email':
      return { content: [{ type: 'text', text: `queued email (${String(args.subject ?? '').length} chars subject)` }] };
    case 'post_to_forum':
      return { content: [{ type: 'text', text: 'posted' }] };
    case 'delete_account':
      return { content: [{ type: 'text', text: 'account deleted' }] };
    default:
      return { isError: true, content: [{ type: 'text', text: 'unknown tool' }] };
  }
});
await server.connect(new StdioServerTransport());
