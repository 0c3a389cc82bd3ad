// A stdio MCP server (the SDK's low-level Server, which can answer with JSON-RPC errors) for the
// information-flow and canary tests. Every call is appended to $FLOW_RECORD (tool, arguments)
// before it acts: the witness of what reached a tool. Canaries come from the environment:
//   read_record   returns "record <id>: <$FLOW_RESULT_CANARY>"           (manifest: returns confidential)
//   echo          returns its text                                         (classify rules see it)
//   post_public / post_internal / post_confidential   sinks; answer with a character count
//   fetch_report  a write tool returning "report for <key>: ..."            (manifest: returns confidential)
//   fail_rpc      answers with a JSON-RPC error whose message holds $FLOW_ERROR_CANARY
//   fail_tool     answers with an isError result holding $FLOW_ERROR_CANARY
//   malformed     writes a line that is not JSON, holding $FLOW_MALFORMED_CANARY, and never answers
//   resource note://1 reads as $FLOW_RESOURCE_TEXT (not a tool: only classify rules apply)
//   noisy         writes "flow-server stderr: <$FLOW_STDERR_CANARY>" to stderr, then answers
import { appendFileSync } from 'node:fs';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { CallToolRequestSchema, ErrorCode, ListResourcesRequestSchema, ListToolsRequestSchema, McpError, ReadResourceRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const env = (k: string) => process.env[k] ?? '';
const obj = (props: Record<string, object> = {}) => ({ type: 'object' as const, properties: props });
const TOOLS = [
  { name: 'read_record', inputSchema: obj({ id: { type: 'string' } }) },
  { name: 'echo', inputSchema: obj({ text: { type: 'string' } }) },
  { name: 'post_public', inputSchema: obj({ text: { type: 'string' } }) },
  { name: 'post_internal', inputSchema: obj({ text: { type: 'string' } }) },
  { name: 'post_confidential', inputSchema: obj({ text: { type: 'string' } }) },
  { name: 'fetch_report', inputSchema: obj({ key: { type: 'string' } }) },
  { name: 'fail_rpc', inputSchema: obj({ text: { type: 'string' } }) },
  { name: 'fail_tool', inputSchema: obj({ text: { type: 'string' } }) },
  { name: 'malformed', inputSchema: obj({ text: { type: 'string' } }) },
  { name: 'noisy', inputSchema: obj({ text: { type: 'string' } }) },
];

const text = (t: string) => ({ content: [{ type: 'text' as const, text: t }] });

const server = new Server({ name: 'flow-server', version: '1.0.0' }, { capabilities: { tools: {}, resources: {} } });
server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: TOOLS }));
server.setRequestHandler(ListResourcesRequestSchema, async () => ({ resources: [{ uri: 'note://1', name: 'note' }] }));
server.setRequestHandler(ReadResourceRequestSchema, async (req) => ({
  contents: [{ uri: req.params.uri, mimeType: 'text/plain', text: env('FLOW_RESOURCE_TEXT') || 'a note' }],
}));
server.setRequestHandler(CallToolRequestSchema, async (req, extra) => {
  const name = req.params.name;
  const args = (req.params.arguments ?? {}) as Record<string, string>;
  if (env('FLOW_RECORD')) appendFileSync(env('FLOW_RECORD'), JSON.stringify({ tool: name, arguments: args }) + '\n');
  switch (name) {
    case 'read_record':
      return text(`record ${args.id ?? ''}: ${env('FLOW_RESULT_CANARY') || 'customer data'}`);
    case 'echo':
      return text(args.text ?? '');
    case 'post_public':
    case 'post_internal':
    case 'post_confidential':
      return text(`posted ${String(args.text ?? '').length} characters`);
    case 'fetch_report':
      return text(`report for ${args.key ?? ''}: quarterly figures`);
    case 'fail_rpc':
      throw new McpError(ErrorCode.InternalError, `backend said: ${env('FLOW_ERROR_CANARY')}`);
    case 'fail_tool':
      return { ...text(`tool failed: ${env('FLOW_ERROR_CANARY')}`), isError: true };
    case 'malformed':
      process.stdout.write(`{"jsonrpc":"2.0","id":${JSON.stringify(extra.requestId)},"result":{"content":[{"type":"text","text":"${env('FLOW_MALFORMED_CANARY')}\n`);
      return new Promise(() => undefined);
    case 'noisy':
      process.stderr.write(`flow-server stderr: ${env('FLOW_STDERR_CANARY')}\n`);
      return text('noted');
    default:
      throw new McpError(ErrorCode.InvalidParams, 'unknown tool');
  }
});
await server.connect(new StdioServerTransport());
