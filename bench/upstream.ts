// The tiny upstream for latency runs: a raw newline-delimited JSON-RPC MCP server that answers
// initialize, tools/list, ping and tools/call (tool `echo`, a fixed one-line result) with as
// little work as possible, so the upstream's own cost does not hide the gate's.
const send = (s: string) => process.stdout.write(s);
const INIT_RESULT = '{"capabilities":{"tools":{}},"serverInfo":{"name":"bench-upstream","version":"1"},"protocolVersion":';
const TOOLS = '{"tools":[{"name":"echo","inputSchema":{"type":"object","properties":{"message":{"type":"string"}}}}]}';
const CALL_RESULT = '{"content":[{"type":"text","text":"ok"}]}';

let buf = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (d: string) => {
  buf += d;
  let i: number;
  let out = '';
  while ((i = buf.indexOf('\n')) >= 0) {
    const line = buf.slice(0, i);
    buf = buf.slice(i + 1);
    if (line.length === 0) continue;
    let m: { id?: unknown; method?: unknown; params?: { protocolVersion?: unknown } };
    try {
      m = JSON.parse(line);
    } catch {
      continue;
    }
    if (m.id === undefined || typeof m.method !== 'string') continue; // notifications, replies
    const id = JSON.stringify(m.id);
    let result: string;
    if (m.method === 'tools/call') result = CALL_RESULT;
    else if (m.method === 'initialize') result = INIT_RESULT + JSON.stringify(m.params?.protocolVersion ?? '2025-06-18') + '}';
    else if (m.method === 'tools/list') result = TOOLS;
    else result = '{}';
    out += `{"jsonrpc":"2.0","id":${id},"result":${result}}\n`;
  }
  if (out) send(out);
});
process.stdin.on('end', () => process.exit(0));
