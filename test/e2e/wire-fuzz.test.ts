// Mutated JSON-RPC lines through the real gate binary, against the in-process decoder: a line the
// decoder refuses is answered once with the same refusal code and never reaches the upstream; a
// request it accepts gets exactly one answer with its id; a notification none; whatever reaches
// the upstream is the RFC 8785 form of a message the decoder accepted, and never a tools/call
// without an id. A fixed seed and a fresh one (printed in the test name; FUZZ_SEED=N replays it).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { makeHome, writeFiles, helperScript, tempDir, PERMIT_ALL } from '../helpers/cli.js';
import { RawGate } from '../helpers/raw-gate.js';
import { recorderManifest } from '../helpers/recorder-manifest.js';
import { decodeLine, WireError } from '../../src/wire/message.js';
import { canonicalize } from '../../src/core/canonical.js';

const FIXED_SEED = 0x5eedc10a;
const SCALE = Number(process.env.FUZZ_SCALE ?? 1);
const freshSeed = process.env.FUZZ_SEED !== undefined ? Number(process.env.FUZZ_SEED) : (Date.now() ^ Math.floor(Math.random() * 2 ** 31)) | 0;
const LINES = Math.max(1, Math.round(150 * SCALE));

const MANIFEST = recorderManifest('wire-fuzz@1', []);

const value = fc.oneof(fc.string({ unit: 'grapheme', maxLength: 8 }), fc.integer({ min: -1e6, max: 1e6 }), fc.double({ noNaN: true, noDefaultInfinity: true, min: -1e6, max: 1e6 }), fc.boolean(), fc.constant(null));
const message = fc.oneof(
  fc.record({ jsonrpc: fc.constant('2.0'), id: fc.oneof(fc.integer({ min: 0, max: 1e6 }), fc.stringMatching(/^[a-z0-9]{1,6}$/)), method: fc.constant('tools/call'), params: fc.record({ name: fc.constant('echo'), arguments: fc.record({ text: fc.string({ unit: 'grapheme', maxLength: 8 }), to: fc.constantFrom('a@x', 'b@y') }, { requiredKeys: [] }) }) }),
  fc.record({ jsonrpc: fc.constant('2.0'), id: fc.integer({ min: 0, max: 1e6 }), method: fc.constantFrom('ping', 'resources/list', 'conformance/doc'), params: fc.dictionary(fc.stringMatching(/^[a-zA-Z]{1,4}$/), value, { maxKeys: 3 }) }),
  fc.record({ jsonrpc: fc.constant('2.0'), method: fc.constantFrom('notifications/progress', 'notifications/message'), params: fc.dictionary(fc.stringMatching(/^[a-z]{1,4}$/), value, { maxKeys: 3 }) }),
);
const mutation = fc.record({
  op: fc.constantFrom('flip', 'insert', 'delete', 'replace', 'duplicate', 'drop-id'),
  pos: fc.nat(),
  len: fc.integer({ min: 1, max: 12 }),
  byte: fc.oneof(fc.integer({ min: 0x20, max: 0xff }), fc.constantFrom(...Buffer.from('{}[]",:\\u0eE-.+ \t'))),
});
type Mutation = typeof mutation extends fc.Arbitrary<infer T> ? T : never;

function mutate(line: string, muts: Mutation[]): Buffer {
  let b = Buffer.from(line);
  for (const m of muts) {
    const p = b.length === 0 ? 0 : m.pos % b.length;
    if (m.op === 'flip') b[p] = b[p]! ^ (1 << m.byte % 7);
    else if (m.op === 'replace') b[p] = m.byte;
    else if (m.op === 'insert') b = Buffer.concat([b.subarray(0, p), Buffer.from([m.byte]), b.subarray(p)]);
    else if (m.op === 'delete') b = Buffer.concat([b.subarray(0, p), b.subarray(p + m.len)]);
    else if (m.op === 'duplicate') b = Buffer.concat([b.subarray(0, p + m.len), b.subarray(p)]);
    else if (m.op === 'drop-id') b = Buffer.from(b.toString('latin1').replace(/"id":("[^"]*"|-?\d+),?/, ''), 'latin1'); // a request turned notification
  }
  // One line: a newline or a carriage return would make it two, or strip a byte.
  return Buffer.from(b.filter((x) => x !== 0x0a && x !== 0x0d));
}

type Expect = { kind: 'refused'; code: string } | { kind: 'request'; id: string | number; canonical: string } | { kind: 'notification'; canonical: string; method: string } | { kind: 'response' };

function expectFor(line: Buffer): Expect | null {
  try {
    const m = decodeLine(line);
    if (m.kind === 'request') return typeof m.id === 'string' && m.id.startsWith('sync-') ? null : { kind: 'request', id: m.id, canonical: canonicalize(m.msg) };
    if (m.kind === 'notification') return { kind: 'notification', canonical: canonicalize(m.msg), method: m.method };
    return { kind: 'response' };
  } catch (e) {
    if (!(e instanceof WireError)) throw e;
    return { kind: 'refused', code: e.code };
  }
}

function sample(seed: number): Buffer[] {
  return fc
    .sample(fc.tuple(message, fc.array(mutation, { minLength: 0, maxLength: 3 })), { seed, numRuns: LINES })
    .map(([m, muts]) => mutate(JSON.stringify(m), muts))
    .filter((l) => l.length > 0 && l.toString('latin1').trim().length > 0);
}

/** A gate in front of the recording upstream; `received()` is every line the upstream read. */
async function startGate(): Promise<{ gate: RawGate; received: () => string[] }> {
  const f = writeFiles({ 'm.yaml': MANIFEST, 'p.cedar': PERMIT_ALL });
  const record = join(tempDir(), 'record.jsonl');
  const gate = new RawGate({ home: makeHome(), manifest: f['m.yaml']!, policy: f['p.cedar']!, upstream: [process.execPath, helperScript('upstream.js')], env: { RECORD_LINES: record } });
  await gate.initialize();
  return { gate, received: () => (existsSync(record) ? readFileSync(record, 'utf8').split('\n').filter((l) => l.length > 0) : []) };
}

/**
 * Sends one line and a ping, and collects the host-bound answers (not server notifications)
 * until the ping is answered and, when one is due, the line's own answer has come: answers may
 * overtake one another (a ping passes straight through, a tools/call is decided first).
 */
async function exchange(gate: RawGate, line: Buffer, k: number, due: (a: any) => boolean): Promise<any[]> {
  gate.send(Buffer.concat([line, Buffer.from('\n')]));
  gate.send(`{"jsonrpc":"2.0","id":"sync-${k}","method":"ping"}\n`);
  const answers: any[] = [];
  let synced = false;
  let got = false;
  while (!synced || !got) {
    const a = await gate.next(30_000);
    if (a.id === `sync-${k}`) synced = true;
    else if (a.method === undefined) {
      answers.push(a);
      if (due(a)) got = true;
    }
    if (synced && due === NOTHING) got = true;
  }
  return answers;
}
const NOTHING = (): boolean => false;

/** A tools/call without an id: refused and recorded, never forwarded, not answered (product.md 1). */
const isToolsCallNotification = (w: Expect | null): boolean => w?.kind === 'notification' && w.method === 'tools/call';

for (const seed of [FIXED_SEED, freshSeed]) {
  test(`mutated lines through the binary agree with the in-process decoder [FUZZ_SEED=${seed}, ${LINES} lines]`, async () => {
    const lines = sample(seed);
    const { gate, received } = await startGate();
    try {
      const accepted = new Set<string>();
      const where = (k: number) => `line ${k} (FUZZ_SEED=${seed}): ${lines[k]!.toString('hex')}`;
      for (let k = 0; k < lines.length; k++) {
        const want = expectFor(lines[k]!);
        // Answers to server requests are the doors' own matter; tools/call notifications have
        // their own test below.
        if (want === null || want.kind === 'response' || isToolsCallNotification(want)) continue;
        if (want.kind === 'refused') {
          const answers = await exchange(gate, lines[k]!, k, (a) => a.error !== undefined);
          assert.equal(answers.length, 1, `${where(k)}: one answer to a refused line: ${JSON.stringify(answers)}`);
          assert.equal(answers[0].error?.data?.reason, want.code, where(k));
        } else if (want.kind === 'request') {
          accepted.add(want.canonical);
          const answers = await exchange(gate, lines[k]!, k, (a) => a.id === want.id);
          assert.equal(answers.length, 1, `${where(k)}: one answer to a request: ${JSON.stringify(answers)}`);
          assert.deepEqual(answers[0].id, want.id, where(k));
        } else {
          accepted.add(want.canonical);
          const answers = await exchange(gate, lines[k]!, k, NOTHING);
          assert.equal(answers.length, 0, `${where(k)}: a notification is not answered: ${JSON.stringify(answers)}`);
        }
      }
      for (const l of received()) {
        const m = JSON.parse(l);
        if (typeof m.id === 'string' && (m.id.startsWith('sync-') || m.id.startsWith('init'))) continue;
        if (m.method === 'notifications/initialized') continue;
        assert.ok(accepted.has(l), `the upstream received a line that is not the canonical form of an accepted message: ${l}`);
      }
    } finally {
      await gate.end();
    }
  });
}

test('the tools/call notifications among the mutated lines are never forwarded nor answered', async () => {
  const lines = [...sample(FIXED_SEED), ...sample(freshSeed)].filter((l) => isToolsCallNotification(expectFor(l)));
  lines.push(Buffer.from('{"jsonrpc":"2.0","method":"tools/call","params":{"name":"echo","arguments":{"text":"delete everything"}}}'));
  const { gate, received } = await startGate();
  try {
    for (let k = 0; k < lines.length; k++) {
      const answers = await exchange(gate, lines[k]!, k, NOTHING);
      assert.equal(answers.length, 0, `${lines[k]!.toString()}: answered ${JSON.stringify(answers)}`);
    }
    const forwarded = received().filter((l) => {
      const m = JSON.parse(l);
      return m.method === 'tools/call';
    });
    assert.deepEqual(forwarded, []);
  } finally {
    await gate.end();
  }
});

// product.md section 1: a refused line is answered with its id whenever the id can be read,
// with a bounded scan of the top level; never with an id read from inside params or a string.
const idValue = fc.oneof(fc.integer({ min: -1e9, max: 1e9 }), fc.stringMatching(/^[A-Za-z0-9_-]{1,10}$/));
// Damage inside params, which leaves the top level readable wherever the id stands.
const inner = [
  { name: 'a lone surrogate', apply: (s: string) => s.replace('"text":"', '"text":"\\udc00') },
  { name: 'a duplicate argument', apply: (s: string) => s.replace('"text":', '"to":"x","TO":') },
  { name: 'an integer past 2^53', apply: (s: string) => s.replace('"text":', '"n":9007199254740993,"text":') },
  { name: 'a raw tab', apply: (s: string) => s.replace('"text":"', '"text":"\t') },
];
// Damage at the end of the line, after an id written first.
const outer = [
  { name: 'truncated', apply: (s: string) => s.slice(0, -3) },
  { name: 'trailing data', apply: (s: string) => s + ' {}' },
];

test('a refused line is answered with the top-level id, wherever it stands, and never with a nested one', async () => {
  const shape = fc.constantFrom('id first', 'id last', 'only nested ids');
  const cases = fc.sample(fc.tuple(idValue, shape, fc.constantFrom(...inner, ...outer)), { seed: FIXED_SEED, numRuns: 60 });
  const { gate } = await startGate();
  try {
    for (const [id, where, d] of cases) {
      const nestedParams = '{"name":"echo","arguments":{"text":"say \\"id\\":7","to":"a@x","meta":{"id":99}}}';
      const params = '{"name":"echo","arguments":{"text":"say \\"id\\":7","to":"a@x"}}';
      let line: string;
      let want: unknown;
      if (where === 'id first') {
        line = d.apply(`{"jsonrpc":"2.0","id":${JSON.stringify(id)},"method":"tools/call","params":${params}}`);
        want = id;
      } else if (where === 'id last') {
        // The SDK writes the id after params, at the end of the line.
        const di = inner.includes(d) ? d : inner[0]!;
        line = `{"jsonrpc":"2.0","method":"tools/call","params":${di.apply(params)},"id":${JSON.stringify(id)}}`;
        want = id;
      } else {
        line = d.apply(`{"jsonrpc":"2.0","method":"tools/call","params":${nestedParams}}`);
        want = null;
      }
      assert.equal(expectFor(Buffer.from(line))?.kind, 'refused', line);
      const answers = await exchange(gate, Buffer.from(line), 0, (a) => a.error !== undefined);
      assert.equal(answers.length, 1, line);
      assert.deepEqual(answers[0].id, want, `${where}, ${d.name}: ${line}`);
    }
  } finally {
    await gate.end();
  }
});
