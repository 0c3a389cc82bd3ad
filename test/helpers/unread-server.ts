// A raw stdio MCP server that stops reading its stdin after its first ping (the host's check that
// the session is open), until SIGUSR2: a server stuck in a long computation. It counts the
// notifications it read; a ping's answer says how many.
import { createInterface } from 'node:readline';

const send = (m: unknown) => process.stdout.write(JSON.stringify(m) + '\n');
let notifications = 0;
let pings = 0;
const rl = createInterface({ input: process.stdin });
setInterval(() => undefined, 1 << 30); // a paused stdin does not keep the process alive
process.on('SIGUSR2', () => rl.resume());
rl.on('line', (line) => {
  const m = JSON.parse(line) as { id?: number | string; method?: string; params?: { protocolVersion?: string } };
  if (m.id === undefined) return void notifications++;
  if (m.method === 'initialize') {
    return send({ jsonrpc: '2.0', id: m.id, result: { protocolVersion: m.params?.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'unread', version: '1' } } });
  }
  if (m.method === 'ping') {
    send({ jsonrpc: '2.0', id: m.id, result: { _meta: { notifications } } });
    if (pings++ === 0) rl.pause();
    return;
  }
  send({ jsonrpc: '2.0', id: m.id, error: { code: -32601, message: 'method not found' } });
});
