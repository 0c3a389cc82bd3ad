// A tools/call the relay refuses before the gate decides it (params of the wrong shape, an id
// already in flight) is recorded with the digest of the line the host sent, as every other
// wire refusal is: the entry must let an auditor match the refused message. It held the digest
// of no bytes at all (sha256 of the empty string).
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { EVERYTHING, cloakpipe, makeHome, writeFiles, PERMIT_ALL } from '../helpers/cli.js';
import { RawGate } from '../helpers/raw-gate.js';
import { answerTo, openSession } from '../helpers/raw-session.js';
import { digestBytes } from '../../src/core/digest.js';

const MANIFEST = `version: 1
release: refused-call-line@1
tools:
  echo: { effect: read, arguments: { message: { type: string } } }
  trigger-long-running-operation: { effect: read, arguments: { duration: { type: number }, steps: { type: integer } } }
`;

let files: Record<string, string>;
before(() => {
  files = writeFiles({ 'm.yaml': MANIFEST, 'p.cedar': PERMIT_ALL });
});

test('a call refused for its params or for an id in flight is recorded with its own line digest', { timeout: 180_000 }, async () => {
  const home = makeHome();
  const gate = new RawGate({ home, manifest: files['m.yaml'], policy: files['p.cedar'], upstream: [process.execPath, EVERYTHING, 'stdio'] });
  await openSession(gate);
  const shape = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"a"},"extra":true}}';
  gate.send(shape + '\n');
  assert.equal((await answerTo(gate, 1)).error.data.reason, 'invalid_request');
  gate.send('{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"trigger-long-running-operation","arguments":{"duration":3,"steps":1}}}\n');
  const again = '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"message":"b"}}}';
  gate.send(again + '\n');
  const refused = await answerTo(gate, 2);
  assert.match(refused.error.message, /already in flight/, JSON.stringify(refused));
  assert.ok((await answerTo(gate, 2)).result, 'the first call with that id is answered by the server');
  await gate.end();
  const entries = cloakpipe(['ledger', 'show', '--home', home, '--json']).stdout.trim().split('\n').map((l) => JSON.parse(l));
  const refusals = entries.filter((e) => e.kind === 'decision' && e.outcome === 'refuse');
  assert.deepEqual(
    refusals.map((e) => [e.reason, e.line_digest]),
    [
      ['invalid_request', digestBytes(Buffer.from(shape))],
      ['invalid_request', digestBytes(Buffer.from(again))],
    ],
  );
});
