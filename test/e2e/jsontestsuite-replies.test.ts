// JSONTestSuite documents in the other direction: an upstream answers a tools/call with the
// document as a member of its result (test/helpers/upstream.ts, UPSTREAM_TOOLS=suite). product.md section 7a:
// replies are read by the same strict parser and reach the host re-serialized (RFC 8785); an
// unreadable reply is dropped, and its call ends as the upstream's death would (-32003, outcome
// unknown, at --call-timeout).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { makeHome, writeFiles, helperScript, PERMIT_ALL } from '../helpers/cli.js';
import { gateArgs } from '../helpers/gate.js';
import { REPRESENTATIVE, suiteFile } from '../helpers/jsontestsuite.js';
import { decodeLine, encodeMessage, WireError } from '../../src/wire/message.js';

const MANIFEST = `version: 1
release: jsontestsuite-replies@1
tools:
  doc:
    effect: read
    arguments:
      corpus: { type: string, enum: [test_parsing, test_transform], required: true }
      file: { type: string, pattern: "[A-Za-z0-9_.+-]+", required: true }
`;

/** What the gate should make of the upstream's reply line: forward this line, or drop it. */
function expected(corpus: string, file: string, id: number): { forwards: string } | { drops: string } {
  let doc = suiteFile(corpus as 'test_parsing', file);
  if (doc[doc.length - 1] === 0x0a) doc = doc.subarray(0, -1);
  const line = Buffer.concat([Buffer.from(`{"jsonrpc":"2.0","id":${id},"result":{"content":[],"doc":`), doc, Buffer.from('}}')]);
  try {
    return { forwards: encodeMessage(decodeLine(line).msg) };
  } catch (e) {
    assert.ok(e instanceof WireError);
    return { drops: e.code };
  }
}

let child: ChildProcess;
const raw = new Map<unknown, string>(); // id → the first line the host received for it
const unreadable: string[] = [];
const twice: string[] = [];

before(async () => {
  const f = writeFiles({ 'm.yaml': MANIFEST, 'p.cedar': PERMIT_ALL });
  const args = gateArgs({ home: makeHome(), manifest: f['m.yaml']!, policy: f['p.cedar']!, flags: ['--call-timeout', '2s'], upstream: [process.execPath, helperScript('upstream.js')] });
  child = spawn(process.execPath, args, { stdio: ['pipe', 'pipe', 'ignore'], env: { ...process.env, UPSTREAM_TOOLS: 'suite' } });
  let buf = Buffer.alloc(0);
  const want = REPRESENTATIVE.length + 1;
  const all = new Promise<void>((resolve) => {
    // A liveness bound, not a measurement: a call never answered shows as a missing line below.
    setTimeout(resolve, 60_000).unref();
    child.stdout!.on('data', (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      let i: number;
      while ((i = buf.indexOf(0x0a)) >= 0) {
        const line = buf.subarray(0, i).toString('utf8');
        buf = buf.subarray(i + 1);
        let id: unknown;
        try {
          id = JSON.parse(line).id;
        } catch {
          unreadable.push(line); // forwarded as the upstream wrote it: what 7a forbids
          continue;
        }
        // A second line for one id (a raw reply, then -32003) keeps both.
        if (raw.has(id)) twice.push(line);
        else raw.set(id, line);
        if (raw.size >= want) resolve();
      }
    });
  });
  const send = (m: object) => child.stdin!.write(JSON.stringify(m) + '\n');
  send({ jsonrpc: '2.0', id: 'init', method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } });
  send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  // All calls at once: the dropped ones time out together.
  REPRESENTATIVE.forEach(([corpus, file], k) => send({ jsonrpc: '2.0', id: 1000 + k, method: 'tools/call', params: { name: 'doc', arguments: { corpus, file } } }));
  await all;
});

after(() => {
  child?.stdin?.end();
});

test('replies the parser accepts reach the host as the RFC 8785 form of what the gate read', () => {
  let n = 0;
  REPRESENTATIVE.forEach(([corpus, file], k) => {
    const want = expected(corpus, file, 1000 + k);
    if (!('forwards' in want)) return;
    n++;
    assert.equal(raw.get(1000 + k) + '\n', want.forwards, file);
  });
  assert.ok(n >= 7);
});

test('replies the parser refuses never reach the host; their calls end -32003, outcome unknown', () => {
  let n = 0;
  REPRESENTATIVE.forEach(([corpus, file], k) => {
    const want = expected(corpus, file, 1000 + k);
    if (!('drops' in want)) return;
    n++;
    assert.ok(raw.has(1000 + k), `${file}: the call was never answered`);
    const got = JSON.parse(raw.get(1000 + k)!);
    assert.equal(got.result, undefined, `${file}: the unreadable reply reached the host`);
    assert.equal(got.error?.code, -32003, `${file}: ${raw.get(1000 + k)}`);
  });
  assert.ok(n >= 12);
  assert.deepEqual(unreadable, [], 'no line the host cannot parse');
  assert.deepEqual(twice, [], 'one answer per call');
});
