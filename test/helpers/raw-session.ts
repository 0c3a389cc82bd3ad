// A raw session at the MCP version that has tasks (2025-11-25), for tests that drive the real
// gate, or a server straight, with lines an SDK client would not send.
import { START_TIMEOUT_MS, type RawPeer } from './raw-gate.js';

/** initialize, notifications/initialized, then a ping: everything sent so far has reached the server. */
export async function openSession(peer: RawPeer): Promise<void> {
  peer.send(JSON.stringify({ jsonrpc: '2.0', id: 'init', method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } }) + '\n');
  await answerTo(peer, 'init', START_TIMEOUT_MS);
  peer.send(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) + '\n');
  peer.send(JSON.stringify({ jsonrpc: '2.0', id: 'ping', method: 'ping' }) + '\n');
  await answerTo(peer, 'ping');
}

/** The answer to `id`, skipping the server's requests and notifications on the way. */
export async function answerTo(peer: RawPeer, id: unknown, timeoutMs?: number): Promise<any> {
  for (;;) {
    const m = await peer.next(timeoutMs);
    if (m.id === id && m.method === undefined) return m;
  }
}

/** A tools/call of `name` with `params` beside its name, and its answer. */
export function callRaw(peer: RawPeer, id: number, name: string, params: object): Promise<any> {
  peer.send(JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, ...params } }) + '\n');
  return answerTo(peer, id);
}
