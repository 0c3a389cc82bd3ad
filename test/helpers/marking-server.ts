// A raw stdio MCP server that shows its host a marked text ($MARKED) in every place MCP has for
// server output, one per tool or method, to prove the gate's labels see each of them:
// - `blob` {mimeType, charset?}: an embedded resource whose base64 `blob` is the text, encoded
//   in `charset` (utf-8, utf-16le); a resources/read of `media:<mimeType>` answers the same.
// - `link`: a resource_link whose uri is a percent-encoded data: URL of the text (RFC 2397);
//   `query`: one whose https URL carries the text percent-encoded in its query.
// - `progress`: a notifications/progress whose message is the text, before a plain result.
// - `log`: a notifications/message (logging) whose data is the text, before a plain result.
// - completion/complete: the text as the one completion value.
// - `sample`: a sampling/createMessage request to the host holding the text, then a plain result.
// - `fail`: a JSON-RPC error whose data is the text; `structured`: the text only in
//   structuredContent; `meta`: the text only in the result's _meta.
// - `post`: the sink (a plain result).
import { createInterface } from 'node:readline';

const MARKED = process.env.MARKED ?? 'no marker';
const send = (m: unknown) => process.stdout.write(JSON.stringify(m) + '\n');
const text = (t: string) => ({ content: [{ type: 'text', text: t }] });
const TOOLS = ['blob', 'link', 'query', 'progress', 'log', 'sample', 'fail', 'structured', 'meta', 'post'];
const waiting = new Map<string, number | string>(); // a request of ours → the call it answers

/** RFC 3986 percent-encoding of every byte: no letter of the text is left as itself. */
const percentAll = (t: string) => [...Buffer.from(t, 'utf8')].map((b) => `%${b.toString(16).padStart(2, '0').toUpperCase()}`).join('');
const blob = (mimeType: string, charset: BufferEncoding = 'utf8') => ({ uri: 'file:///marked', mimeType, blob: Buffer.from(MARKED, charset).toString('base64') });

createInterface({ input: process.stdin }).on('line', (line) => {
  const m = JSON.parse(line) as { id?: number | string; method?: string; params?: Record<string, any> };
  const id = m.id;
  if (id === undefined) return; // notifications
  const answered = waiting.get(String(id));
  if (answered !== undefined && m.method === undefined) return (waiting.delete(String(id)), send({ jsonrpc: '2.0', id: answered, result: text('done') }));
  const p = m.params ?? {};
  switch (m.method) {
    case 'initialize':
      return send({
        jsonrpc: '2.0',
        id,
        result: { protocolVersion: p.protocolVersion, capabilities: { tools: {}, resources: {}, completions: {}, logging: {} }, serverInfo: { name: 'marking', version: '1' } },
      });
    case 'tools/list':
      return send({ jsonrpc: '2.0', id, result: { tools: TOOLS.map((name) => ({ name, inputSchema: { type: 'object' } })) } });
    case 'logging/setLevel':
      return send({ jsonrpc: '2.0', id, result: {} });
    case 'completion/complete':
      return send({ jsonrpc: '2.0', id, result: { completion: { values: [MARKED], total: 1, hasMore: false } } });
    case 'resources/read': {
      const type = String(p.uri).replace(/^media:/, '');
      return send({ jsonrpc: '2.0', id, result: { contents: [blob(type)] } });
    }
    case 'tools/call': {
      const args = p.arguments ?? {};
      switch (p.name) {
        case 'blob':
          return send({ jsonrpc: '2.0', id, result: { content: [{ type: 'resource', resource: blob(args.mimeType, args.charset === 'utf-16le' ? 'utf16le' : 'utf8') }] } });
        case 'link':
          return send({ jsonrpc: '2.0', id, result: { content: [{ type: 'resource_link', name: 'marked', uri: `data:text/plain,${percentAll(MARKED)}` }] } });
        case 'query':
          return send({ jsonrpc: '2.0', id, result: { content: [{ type: 'resource_link', name: 'found', uri: `https://files.example/find?q=${percentAll(MARKED)}` }] } });
        case 'progress':
          send({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: p._meta?.progressToken ?? 0, progress: 1, total: 2, message: MARKED } });
          return send({ jsonrpc: '2.0', id, result: text('done') });
        case 'log':
          send({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', logger: 'marking', data: MARKED } });
          return send({ jsonrpc: '2.0', id, result: text('done') });
        case 'sample':
          waiting.set('sample-1', id);
          return send({ jsonrpc: '2.0', id: 'sample-1', method: 'sampling/createMessage', params: { messages: [{ role: 'user', content: { type: 'text', text: MARKED } }], maxTokens: 10 } });
        case 'fail':
          return send({ jsonrpc: '2.0', id, error: { code: -32000, message: 'failed', data: { detail: MARKED } } });
        case 'structured':
          return send({ jsonrpc: '2.0', id, result: { content: [{ type: 'text', text: 'see structured' }], structuredContent: { rows: [MARKED] } } });
        case 'meta':
          return send({ jsonrpc: '2.0', id, result: { content: [{ type: 'text', text: 'see meta' }], _meta: { note: MARKED } } });
        default:
          return send({ jsonrpc: '2.0', id, result: text('posted') });
      }
    }
    default:
      return send({ jsonrpc: '2.0', id, error: { code: -32601, message: 'method not found' } });
  }
});
