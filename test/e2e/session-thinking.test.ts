// @modelcontextprotocol/server-sequential-thinking through the real gate. The server keeps every
// thought it is sent and says how many (thoughtHistoryLength), so a later answer proves what
// arrived; and it coerces what its schema reads ("3" is 3, "false" is false), so what the gate
// checks and what the server acts on can differ. First the official SDK client's session, straight
// and through the gate, compared call by call, with a Cedar rule on an integer argument. Then
// raw lines (number spellings, strings the server would coerce, escaped and repeated keys) sent
// to the gate and straight to the server: whatever the gate forwards, the server reads as the
// gate checked it; and the thought, a canary, is in no record or line of the gate's own.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { cloakpipe, makeHome, ROOT, writeFiles } from '../helpers/cli.js';
import { RawGate, RawPeer } from '../helpers/raw-gate.js';
import { onlyDeclared, pairedSession, type Step } from '../helpers/session-pair.js';
import { canary } from '../helpers/capture.js';

const THINKING = [process.execPath, join(ROOT, 'node_modules/@modelcontextprotocol/server-sequential-thinking/dist/index.js')];

const MANIFEST = `version: 1
release: thinking-session@1
tools:
  sequentialthinking:
    effect: read
    arguments:
      thought: { type: string, max_len: 200, required: true }
      nextThoughtNeeded: { type: boolean, required: true }
      thoughtNumber: { type: integer, minimum: 1, maximum: 8, required: true }
      totalThoughts: { type: integer, minimum: 1, maximum: 8, required: true }
      isRevision: { type: boolean }
      revisesThought: { type: integer, minimum: 1, maximum: 8 }
      branchFromThought: { type: integer, minimum: 1, maximum: 8 }
      branchId: { type: string, pattern: "[a-z0-9-]{1,20}" }
      needsMoreThoughts: { type: boolean }
`;

// The manifest allows up to 8; the policy holds a plan to 6 thoughts.
const POLICY = `permit (principal, action, resource);
forbid (principal, action, resource) when { context.args has totalThoughts && context.args.totalThoughts > 6 };
`;

const think = (args: Record<string, unknown>) => (c: Client) => c.callTool({ name: 'sequentialthinking', arguments: args });
const step = (n: number, total: number, more = true, extra: Record<string, unknown> = {}) => think({ thought: `step ${n} of the plan`, thoughtNumber: n, totalThoughts: total, nextThoughtNeeded: more, ...extra });

const STEPS: Step[] = [
  { label: 'tools/list', run: (c) => c.listTools(), expectThroughGate: onlyDeclared(['sequentialthinking']) },
  { label: 'thought 1 of 3', run: step(1, 3) },
  { label: 'thought 2 of 3', run: step(2, 3) },
  { label: 'a revision of thought 1', run: step(3, 3, true, { isRevision: true, revisesThought: 1 }) },
  { label: 'a branch from thought 2', run: step(4, 5, true, { branchFromThought: 2, branchId: 'alt-1' }) },
  // The server raises totalThoughts to thoughtNumber: the answer says 5 of 5, as straight.
  { label: 'thoughtNumber past totalThoughts', run: step(5, 4) },
  // What the gate refuses; the server would take each one.
  { label: 'a plan of 7 thoughts', run: step(6, 7), refusedBy: 'policy_denied' },
  { label: 'a plan of 9 thoughts', run: step(6, 9), refusedBy: 'argument_invalid' },
  { label: 'thoughtNumber as the string "6"', run: think({ thought: 'x', thoughtNumber: '6', totalThoughts: 6, nextThoughtNeeded: true }), refusedBy: 'argument_invalid' },
  { label: 'nextThoughtNeeded as the string "false"', run: think({ thought: 'x', thoughtNumber: 6, totalThoughts: 6, nextThoughtNeeded: 'false' }), refusedBy: 'argument_invalid' },
  { label: 'a branch id with a space', run: step(6, 6, true, { branchFromThought: 1, branchId: 'alt 2' }), refusedBy: 'argument_invalid' },
  { label: 'an undeclared argument', run: step(6, 6, true, { confidence: 0.9 }), refusedBy: 'undeclared_argument' },
  // Six thoughts arrived straight and through the gate: none of the refused ones did.
  { label: 'the last thought: the history holds six', run: step(6, 6, false) },
];

pairedSession('sequential-thinking', STEPS, { manifest: MANIFEST, policy: POLICY, command: THINKING });

// ── raw lines ────────────────────────────────────────────────────────────────────────────────

const THOUGHT = canary('thought');
const base = (n: string, total = '6', more = 'true') => `"thought":"${THOUGHT}","thoughtNumber":${n},"totalThoughts":${total},"nextThoughtNeeded":${more}`;

/** Each line's arguments as written, and what the gate does with it: forwards it, or refuses it with this reason. */
const LINES: { label: string; args: string; gate: 'forward' | string }[] = [
  { label: 'integers as written', args: `{${base('2')}}`, gate: 'forward' },
  { label: '3.0', args: `{${base('3.0')}}`, gate: 'forward' },
  { label: '4e0', args: `{${base('4e0')}}`, gate: 'forward' },
  { label: '50e-1', args: `{${base('50e-1')}}`, gate: 'forward' },
  { label: '0.1e1 (one)', args: `{${base('0.1e1')}}`, gate: 'forward' },
  { label: 'a plan of 6E0', args: `{${base('1', '6E0')}}`, gate: 'forward' },
  { label: 'a plan of 1e1 (ten)', args: `{${base('1', '1e1')}}`, gate: 'argument_invalid' },
  { label: 'a plan of 70e-1 (seven)', args: `{${base('1', '70e-1')}}`, gate: 'policy_denied' },
  { label: 'thoughtNumber 2.5', args: `{${base('2.5')}}`, gate: 'argument_invalid' },
  { label: 'thoughtNumber -0', args: `{${base('-0')}}`, gate: 'argument_invalid' },
  { label: 'thoughtNumber as the string "3"', args: `{${base('"3"')}}`, gate: 'argument_invalid' },
  { label: 'thoughtNumber as the string "1e1"', args: `{${base('"1e1"')}}`, gate: 'argument_invalid' },
  { label: 'nextThoughtNeeded as "false"', args: `{${base('2', '6', '"false"')}}`, gate: 'argument_invalid' },
  { label: 'nextThoughtNeeded as 0', args: `{${base('2', '6', '0')}}`, gate: 'argument_invalid' },
  { label: 'a key spelled with an escape', args: `{"thought":"${THOUGHT}","thoughtNumb\\u0065r":2,"totalThoughts":6,"nextThoughtNeeded":true}`, gate: 'forward' },
  { label: 'thoughtNumber twice, once escaped', args: `{${base('2')},"thoughtNumb\\u0065r":9}`, gate: 'duplicate_key' },
  { label: 'totalThoughts twice', args: `{${base('2')},"totalThoughts":8}`, gate: 'duplicate_key' },
  { label: 'a __proto__ key', args: `{${base('2')},"__proto__":{"totalThoughts":9}}`, gate: 'undeclared_argument' },
  { label: 'null for an optional integer', args: `{${base('2')},"revisesThought":null}`, gate: 'argument_invalid' },
];

/** What the server read: the numbers and flag its answer echoes (its history length left out), or its error. */
function reading(msg: any): unknown {
  if (msg.error) return { error: msg.error.code };
  const text = msg.result?.content?.[0]?.text;
  const r = JSON.parse(text);
  if (msg.result.isError) return { isError: true };
  return { thoughtNumber: r.thoughtNumber, totalThoughts: r.totalThoughts, nextThoughtNeeded: r.nextThoughtNeeded };
}

const call = (id: number, args: string) => `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"sequentialthinking","arguments":${args}}}\n`;

let gate: RawGate;
let straight: RawPeer;
let home: string;
const seen: { gated: any; direct: any }[] = [];

before(async () => {
  const f = writeFiles({ 'm.yaml': MANIFEST, 'p.cedar': POLICY });
  home = makeHome();
  gate = new RawGate({ home, manifest: f['m.yaml'], policy: f['p.cedar'], upstream: THINKING });
  straight = new RawPeer(THINKING);
  await Promise.all([gate.initialize(), straight.initialize()]);
  for (const [k, l] of LINES.entries()) {
    gate.send(call(k + 1, l.args));
    straight.send(call(k + 1, l.args));
    seen.push({ gated: await gate.next(), direct: await straight.next() });
  }
  await Promise.all([gate.end(), straight.end()]);
});

after(() => {
  gate?.child.kill('SIGKILL');
  straight?.child.kill('SIGKILL');
});

LINES.forEach((l, k) => {
  test(`raw line: ${l.label}: ${l.gate === 'forward' ? 'forwarded, and the server reads what the gate checked' : `refused ${l.gate}`}`, () => {
    const { gated, direct } = seen[k];
    assert.equal(gated.id, k + 1);
    if (l.gate !== 'forward') {
      assert.equal(gated.error?.data?.reason, l.gate, JSON.stringify(gated));
      return;
    }
    assert.ok(gated.result, JSON.stringify(gated));
    const read = reading(gated) as { thoughtNumber: number; totalThoughts: number };
    assert.deepEqual(read, reading(direct), 'the server read the forwarded call as it reads the line straight');
    assert.ok(Number.isInteger(read.thoughtNumber) && read.thoughtNumber >= 1 && read.thoughtNumber <= 8, JSON.stringify(read));
    assert.ok(read.totalThoughts <= 6 || read.totalThoughts === read.thoughtNumber, JSON.stringify(read));
  });
});

test('raw lines: the server kept exactly the thoughts the gate forwarded', () => {
  const forwarded = LINES.filter((l) => l.gate === 'forward').length;
  const last = [...seen].reverse().find((s) => s.gated.result)!;
  assert.equal(JSON.parse(last.gated.result.content[0].text).thoughtHistoryLength, forwarded);
});

test('raw lines: the thought is in no entry and no line of the gate\'s own; the server\'s own stderr passes through', () => {
  const ledger = cloakpipe(['ledger', 'show', '--json', '--home', home]);
  assert.equal(ledger.status, 0, ledger.stderr);
  assert.ok(!ledger.stdout.includes(THOUGHT));
  assert.equal(cloakpipe(['verify', '--home', home]).status, 0);
  for (const f of ['ledger.db', 'ledger.db-wal', 'operations.db', 'operations.db-wal'])
    if (existsSync(join(home, f))) assert.ok(!readFileSync(join(home, f)).includes(THOUGHT), `nor anywhere in ${f}`);
  // The server prints each thought it keeps, boxed, on its stderr: those lines reach the gate's
  // stderr unchanged (ADR 003), and they are the only ones with the canary.
  const own = straight.stderr.split('\n').filter((x) => x.includes(THOUGHT));
  const through = gate.stderr.split('\n').filter((x) => x.includes(THOUGHT));
  assert.ok(own.length > 0, 'the server printed the thoughts it kept');
  assert.equal(through.length, LINES.filter((l) => l.gate === 'forward').length, 'one line per thought forwarded');
  for (const x of through) assert.ok(own.includes(x), x);
  for (const x of gate.stderr.split('\n')) if (x.startsWith('{')) assert.ok(!x.includes(THOUGHT), x);
});
