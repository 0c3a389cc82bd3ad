// JSONTestSuite documents through the real gate binary's stdio door, each as the params of a
// request (`{"jsonrpc":"2.0","id":N,"method":"conformance/doc","params":{"doc":<the file's
// bytes>}}`): what the in-process parser accepts reaches the upstream as the RFC 8785 form of
// the value it read; what it refuses is answered with its code and never reaches the upstream.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { makeHome, writeFiles, helperScript, tempDir, PERMIT_ALL } from '../helpers/cli.js';
import { RawGate } from '../helpers/raw-gate.js';
import { suiteFile, REPRESENTATIVE as FILES } from '../helpers/jsontestsuite.js';
import { decodeLine, WireError } from '../../src/wire/message.js';
import { canonicalize } from '../../src/core/canonical.js';
import { parseStrict } from '../../src/wire/strict-parse.js';
import { decodeUtf8 } from '../../src/wire/utf8.js';

const METHOD = 'conformance/doc';

interface Case {
  name: string;
  id: number;
  line: Buffer;
  /** The in-process verdict on the same line. */
  expect: { ok: true; forwarded: string } | { ok: false; code: string };
}

function cases(): Case[] {
  return FILES.map(([dir, name], k) => {
    let doc = suiteFile(dir, name);
    // A trailing newline is whitespace to the document but would end the line here.
    if (doc[doc.length - 1] === 0x0a) doc = doc.subarray(0, -1);
    assert.ok(!doc.includes(0x0a) && !doc.includes(0x0d), `${name} fits on one line`);
    const id = 100 + k;
    const line = Buffer.concat([Buffer.from(`{"jsonrpc":"2.0","id":${id},"method":"${METHOD}","params":{"doc":`), doc, Buffer.from('}}')]);
    let alone: string | null = null;
    try {
      parseStrict(decodeUtf8(doc));
    } catch (e) {
      alone = (e as WireError).code;
    }
    try {
      const m = decodeLine(line);
      assert.equal(alone, null, `${name}: accepted inside a request, refused on its own`);
      return { name, id, line, expect: { ok: true, forwarded: canonicalize(m.msg) } };
    } catch (e) {
      assert.ok(e instanceof WireError, `${name}: ${String(e)}`);
      assert.equal(e.code, alone, `${name}: the same verdict inside a request as on its own`);
      return { name, id, line, expect: { ok: false, code: e.code } };
    }
  });
}

let gate: RawGate;
let received: () => string[];
let all: Case[];
const answers = new Map<number, any>();

before(async () => {
  all = cases();
  // The selection holds both verdicts, so the test below exercises both paths.
  assert.ok(all.filter((c) => c.expect.ok).length >= 7 && all.filter((c) => !c.expect.ok).length >= 12);
  const f = writeFiles({ 'm.yaml': 'version: 1\nrelease: jsontestsuite@1\ntools: {}\n', 'p.cedar': PERMIT_ALL });
  const record = join(tempDir(), 'record.jsonl');
  gate = new RawGate({ home: makeHome(), manifest: f['m.yaml'], policy: f['p.cedar'], upstream: [process.execPath, helperScript('upstream.js')], env: { RECORD_LINES: record } });
  await gate.initialize();
  received = () => (existsSync(record) ? readFileSync(record, 'utf8').split('\n').filter((l) => l.length > 0) : []);
  for (const c of all) {
    gate.send(Buffer.concat([c.line, Buffer.from('\n')]));
    const r = await gate.next();
    answers.set(c.id, r);
  }
  // A ping after the last document: when it is answered, everything before it has reached the
  // upstream or never will.
  gate.send('{"jsonrpc":"2.0","id":"last","method":"ping"}\n');
  assert.equal((await gate.next()).id, 'last');
});

after(async () => {
  await gate?.end();
});

test('accepted documents reach the upstream once, as the RFC 8785 form of what the gate read', () => {
  const lines = received();
  for (const c of all) {
    if (!c.expect.ok) continue;
    const forwarded = c.expect.forwarded;
    const r = answers.get(c.id);
    assert.equal(r.id, c.id, c.name);
    assert.deepEqual(r.result, {}, `${c.name}: ${JSON.stringify(r.error)}`);
    const arrived = lines.filter((l) => l === forwarded);
    assert.equal(arrived.length, 1, `${c.name} arrives exactly once, canonical`);
    assert.ok(!lines.includes(c.line.toString('latin1')), `${c.name}: the raw line is never forwarded`);
  }
});

test('refused documents are answered with their code and never reach the upstream', () => {
  const lines = received();
  const forwardedDocs = lines.map((l) => JSON.parse(l)).filter((m) => m.method === METHOD).map((m) => m.id);
  const acceptedIds = all.filter((c) => c.expect.ok).map((c) => c.id);
  assert.deepEqual(forwardedDocs, acceptedIds, 'exactly the accepted documents reached the upstream, in order');
  for (const c of all) {
    if (c.expect.ok) continue;
    const r = answers.get(c.id);
    assert.ok(r.error, `${c.name} was answered ${JSON.stringify(r)}`);
    assert.equal(r.error.data.reason, c.expect.code, c.name);
    assert.equal(r.error.code, -32700, c.name);
    assert.ok(r.error.message.startsWith(`cloakpipe refused: ${c.expect.code}`), c.name);
    assert.equal(typeof r.error.data.entry, 'number', `${c.name}: the refusal is a ledger entry`);
  }
});

// product.md section 1: the id is recovered from refused lines by a bounded scan of the top level
// (src/wire/id-scan.ts).
test('a refusal carries the request id the scan can read (id first on the line)', () => {
  for (const c of all) {
    if (c.expect.ok) continue;
    assert.equal(answers.get(c.id).id, c.id, c.name);
  }
});
