// A minimal MCP stdio server that records every raw line it receives (to $RECORD_FILE) and
// answers initialize, tools/list and tools/call (echoing its arguments' keys). Tool `exit_now`
// makes it exit before answering; tool `hang` never answers; tool `slow` answers after 1.5 s. It proves what reached the tool.
import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';

const record = process.env.RECORD_FILE;
process.stderr.write('recorder: started\n'); // proves the upstream's stderr reaches the gate's
const rl = createInterface({ input: process.stdin });
const send = (m: object) => process.stdout.write(JSON.stringify(m) + '\n');
// $DESCRIPTIONS_FILE (JSON {tool: text}) lets a test change a tool's definition mid-session.
const descriptions = process.env.DESCRIPTIONS_FILE;
const description = (name: string): string =>
  descriptions && existsSync(descriptions) ? (JSON.parse(readFileSync(descriptions, 'utf8'))[name] ?? name) : name;

rl.on('line', (line) => {
  if (record) appendFileSync(record, line + '\n');
  let m: any;
  try {
    m = JSON.parse(line);
  } catch {
    return;
  }
  if (m.method === 'initialize')
    return send({ jsonrpc: '2.0', id: m.id, result: { protocolVersion: m.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'recorder', version: '1' } } });
  if (m.method === 'tools/list')
    return send({ jsonrpc: '2.0', id: m.id, result: { tools: ['echo', 'exit_now', 'hang', 'slow'].map((name) => ({ name, description: description(name), inputSchema: { type: 'object' } })) } });
  if (m.method === 'tools/call') {
    if (m.params.name === 'exit_now') process.exit(3);
    if (m.params.name === 'hang') return;
    if (m.params.name === 'slow')
      return void setTimeout(() => send({ jsonrpc: '2.0', id: m.id, result: { content: [{ type: 'text', text: 'late' }] } }), 1500);
    return send({ jsonrpc: '2.0', id: m.id, result: { content: [{ type: 'text', text: 'ok' }], structuredContent: { received: m.params.arguments } } });
  }
  if (typeof m.method === 'string' && m.method.startsWith('never/')) return;
  if (m.id !== undefined && m.method) send({ jsonrpc: '2.0', id: m.id, result: {} });
});
