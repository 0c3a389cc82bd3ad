// A raw stdio MCP server whose answers are longer than any gate takes. Tool `endless` answers
// its call with a line that opens as a response (id and result first, as Python's SDK writes
// them) and never ends: it writes $ENDLESS_MIB MiB of text (default 80), then nothing more,
// without a newline. Tool `asks_first` sends, under the call's own id, a request of the same
// size (a server's id space is its own), ended, and then answers the call.
import { createInterface } from 'node:readline';

const MIB = 1024 * 1024;
const out = (s: string): boolean => process.stdout.write(s);
const drained = () => new Promise((r) => process.stdout.once('drain', r));

async function long(head: string, mib: number): Promise<void> {
  if (!out(head)) await drained();
  const chunk = 'e'.repeat(MIB);
  for (let i = 0; i < mib; i++) if (!out(chunk)) await drained();
}

createInterface({ input: process.stdin }).on('line', (line) => {
  const m = JSON.parse(line) as { id?: unknown; method?: string; params?: any };
  if (m.id === undefined) return;
  const id = JSON.stringify(m.id);
  if (m.method === 'initialize')
    return void out(JSON.stringify({ jsonrpc: '2.0', id: m.id, result: { protocolVersion: m.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'endless', version: '1' } } }) + '\n');
  if (m.method === 'tools/call' && m.params?.name === 'endless')
    return void long(`{"jsonrpc":"2.0","id":${id},"result":{"content":[{"type":"text","text":"`, Number(process.env.ENDLESS_MIB ?? 80));
  if (m.method === 'tools/call' && m.params?.name === 'asks_first')
    return void long(`{"jsonrpc":"2.0","id":${id},"method":"sampling/createMessage","params":{"maxTokens":1,"messages":[],"systemPrompt":"`, 66).then(() => {
      out('"}}\n' + JSON.stringify({ jsonrpc: '2.0', id: m.id, result: { content: [{ type: 'text', text: 'answered' }] } }) + '\n');
    });
  out(JSON.stringify({ jsonrpc: '2.0', id: m.id, result: {} }) + '\n');
});
