// A stdio MCP server whose tools/list comes in three pages (cursor "p2", "p3") and whose schemas
// hold what a v1 manifest cannot say, for `manifest draft`: a lookahead pattern, exclusive
// bounds, a type list, nested object properties, minItems, format, anyOf, a name no manifest
// accepts. Calls answer with the tool name and its arguments.
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const PAGES = [
  [
    {
      name: 'lookup',
      annotations: { readOnlyHint: true },
      inputSchema: {
        type: 'object',
        properties: {
          id: { type: 'string', pattern: '^C[0-9]{6}$' },
          code: { type: 'string', pattern: 'ab+' },
          limit: { type: 'integer', minimum: 1, exclusiveMaximum: 100 },
          score: { type: 'number', exclusiveMinimum: 0 },
          tags: { type: 'array', items: { type: 'string', maxLength: 10 }, maxItems: 5, minItems: 1 },
        },
        required: ['id'],
        additionalProperties: false,
      },
    },
  ],
  [
    {
      name: 'send',
      annotations: { readOnlyHint: false, destructiveHint: true },
      inputSchema: {
        type: 'object',
        properties: {
          to: { type: 'string', format: 'email' },
          body: { type: 'string', minLength: 1, maxLength: 4000 },
          idempotency_key: { type: 'string', maxLength: 64 },
          when: { type: ['string', 'null'], maxLength: 30 },
          options: { type: 'object', properties: { urgent: { type: 'boolean' } }, required: ['urgent'] },
          mode: { const: 'plain' },
          lookahead: { type: 'string', pattern: '^(?!admin).*$' },
        },
        required: ['to', 'body'],
      },
    },
    { name: 'unannotated', inputSchema: { type: 'object', properties: { x: { anyOf: [{ type: 'string' }, { type: 'number' }] } } } },
  ],
  [{ name: 'has space', inputSchema: { type: 'object', properties: {} } }],
];

const server = new Server({ name: 'paged-tools', version: '3.1.4' }, { capabilities: { tools: {} } });
server.setRequestHandler(ListToolsRequestSchema, async (req) => {
  const page = req.params?.cursor === 'p2' ? 1 : req.params?.cursor === 'p3' ? 2 : 0;
  return { tools: PAGES[page], ...(page < 2 ? { nextCursor: `p${page + 2}` } : {}) };
});
server.setRequestHandler(CallToolRequestSchema, async (req) => ({
  content: [{ type: 'text', text: JSON.stringify({ tool: req.params.name, arguments: req.params.arguments ?? {} }) }],
}));
await server.connect(new StdioServerTransport());
