// An MCP stdio server whose tool `doc` answers with a JSONTestSuite document, byte for byte, as
// the `doc` member of its result: the reply direction of the strict parser, driven by the same
// corpus as the request direction. Arguments: { corpus: 'test_parsing' | 'test_transform', file }.
import { createInterface } from 'node:readline';
import { suiteFile } from './jsontestsuite.js';

const send = (line: string | Buffer) => process.stdout.write(Buffer.concat([Buffer.from(line), Buffer.from('\n')]));

createInterface({ input: process.stdin }).on('line', (line) => {
  let m: any;
  try {
    m = JSON.parse(line);
  } catch {
    return;
  }
  if (m.method === 'initialize')
    return send(JSON.stringify({ jsonrpc: '2.0', id: m.id, result: { protocolVersion: m.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'suite', version: '1' } } }));
  if (m.method === 'tools/list') return send(JSON.stringify({ jsonrpc: '2.0', id: m.id, result: { tools: [{ name: 'doc', inputSchema: { type: 'object' } }] } }));
  if (m.method === 'tools/call') {
    const { corpus, file } = m.params.arguments;
    let doc = suiteFile(corpus, file);
    if (doc[doc.length - 1] === 0x0a) doc = doc.subarray(0, -1); // whitespace to the document, a line end here
    return send(Buffer.concat([Buffer.from(`{"jsonrpc":"2.0","id":${JSON.stringify(m.id)},"result":{"content":[],"doc":`), doc, Buffer.from('}}')]));
  }
  if (m.id !== undefined && m.method) send(JSON.stringify({ jsonrpc: '2.0', id: m.id, result: {} }));
});
