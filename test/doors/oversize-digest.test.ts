// A line refused frame_too_large is recorded with the digest of the line the host sent, as any
// other wire refusal is: it was hashed as it streamed by, never held. The entry carried the
// empty digest (sha256 of nothing), naming nothing an auditor could match. Raw lines through
// the real binary, in front of server-everything (which never sees the line).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EVERYTHING, makeHome, writeFiles, PERMIT_ALL } from '../helpers/cli.js';
import { RawGate } from '../helpers/raw-gate.js';
import { answerTo, openSession } from '../helpers/raw-session.js';
import { ledgerOf } from '../helpers/gate.js';
import { digestBytes } from '../../src/core/digest.js';

const MANIFEST = `version: 1
release: oversize-digest@1
tools:
  echo: { effect: read, arguments: { message: { type: string } } }
`;

test('frame_too_large is recorded with the digest of the refused line', { timeout: 120_000 }, async () => {
  const f = writeFiles({ 'm.yaml': MANIFEST, 'p.cedar': PERMIT_ALL });
  const home = makeHome();
  const gate = new RawGate({ home, manifest: f['m.yaml'], policy: f['p.cedar'], flags: ['--max-frame', '65536'], upstream: [process.execPath, EVERYTHING, 'stdio'] });
  await openSession(gate);
  const line = Buffer.from(JSON.stringify({ jsonrpc: '2.0', method: 'tools/call', params: { name: 'echo', arguments: { message: 'CANARY-oversize-51f2 '.repeat(5000) } }, id: 9 }));
  // Written in pieces, the last one with the newline: the gate sees the line in many reads.
  for (let i = 0; i < line.length; i += 7000) gate.send(line.subarray(i, i + 7000));
  gate.send('\r\n');
  const answer = await answerTo(gate, 9);
  assert.equal(answer.error?.data?.reason, 'frame_too_large', JSON.stringify(answer).slice(0, 300));
  await gate.end();
  const entry = ledgerOf(home).find((e) => e.seq === answer.error.data.entry);
  assert.equal(entry?.line_digest, digestBytes(line));
  assert.notEqual(entry?.line_digest, digestBytes(''), 'not the empty digest');
  assert.ok(!gate.stderr.includes('CANARY-oversize'), 'the log holds no payload');
});
