// An upstream's last line without its newline, written as it exits (a server that died
// mid-write). MCP's stdio messages end with a newline and the SDK's client never reads such a
// line: straight to the server, the call fails with the connection. The gate read it as a reply
// at the server's exit and passed its result on (and recorded the call ok). Now it is dropped,
// logged by digest, and the call ends as on the upstream's death: outcome unknown.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { helperScript, makeHome, writeFiles, PERMIT_ALL } from '../helpers/cli.js';
import { call, decisions, ledgerOf, startGate } from '../helpers/gate.js';
import { digestBytes } from '../../src/core/digest.js';

const CANARY = 'CANARY-upstream-9c1e';
const MANIFEST = `version: 1
release: upstream-last-line@1
tools:
  unended: { effect: write, arguments: {} }
`;
const SERVER = [process.execPath, helperScript('misbehaving-upstream.js')];

let files: Record<string, string>;
before(() => {
  files = writeFiles({ 'm.yaml': MANIFEST, 'p.cedar': PERMIT_ALL });
});

test('straight to the server, the SDK client never reads the unended line', { timeout: 60_000 }, async () => {
  const client = new Client({ name: 'straight', version: '1' });
  await client.connect(new StdioClientTransport({ command: SERVER[0], args: SERVER.slice(1), stderr: 'ignore' }));
  await assert.rejects(client.callTool({ name: 'unended', arguments: {} }, undefined, { timeout: 30_000 }), /closed/i);
  await client.close();
});

test('through the gate, the unended line is dropped by digest and the call ends outcome unknown', { timeout: 120_000 }, async () => {
  const home = makeHome();
  const g = await startGate({ home, manifest: files['m.yaml'], policy: files['p.cedar'], upstream: SERVER });
  const answer = await call(g, 'unended', {});
  assert.equal(answer.ok, false, `answered ${JSON.stringify(answer)}`);
  if (answer.ok) return;
  assert.equal(answer.code, -32003, answer.message);
  await g.exited;
  await g.close();
  const line = `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"unended ${CANARY}"}]}}`;
  const drop = g.stderr().split('\n').find((l) => l.includes('upstream_message_dropped'));
  assert.ok(drop, 'the line is logged as dropped');
  assert.equal(JSON.parse(drop).line_digest, digestBytes(Buffer.from(line)));
  assert.ok(!g.stderr().includes(CANARY), 'by its digest only');
  const results = ledgerOf(home).filter((e) => e.kind === 'result');
  assert.deepEqual(results.map((e) => e.outcome), ['unknown']);
  assert.equal(decisions(home).length, 1);
});
