// The bridge's decision loop without Docker: frames, bounds, replies, stops, and the ordering of
// live restrictions with calls.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BridgeCore } from '../../src/confine/core.js';
import { Restrictions } from '../../src/confine/restrictions.js';
import type { StopReason } from '../../src/confine/frames.js';
import type { JsonObject } from '../../src/core/json.js';
import { StandInGate } from './fixtures/stand-in-gate.js';

const LABELS = ['public', 'internal', 'confidential', 'restricted'];
const CANARY = 'CANARY-core-' + Math.random().toString(36).slice(2);

function setup(opts: { maxCalls?: number; slowMs?: number; failing?: boolean } = {}) {
  const out: any[] = [];
  const forwarded: Array<{ tool: string; args: JsonObject; t: number }> = [];
  const stops: StopReason[] = [];
  const gate = new StandInGate(LABELS, { send_update: { accepts: 'confidential' }, post_public: { accepts: 'public' } }, 'confidential', opts.failing);
  const restrictions = new Restrictions(['send_update', 'post_public']);
  const core = new BridgeCore({
    aliases: new Map([
      ['notify', 'send_update'],
      ['publish', 'post_public'],
    ]),
    gate,
    forward: async (tool, args) => {
      forwarded.push({ tool, args, t: Date.now() });
      if (opts.slowMs) await new Promise((r) => setTimeout(r, opts.slowMs));
      return { result: { content: [{ type: 'text', text: 'ok' }] } };
    },
    maxCalls: opts.maxCalls ?? 16,
    restrictions,
    writeToAgent: (l) => out.push(JSON.parse(l)),
    onStop: (r) => stops.push(r),
  });
  return { core, out, forwarded, stops, restrictions };
}

const line = (o: unknown) => Buffer.from(JSON.stringify(o) + '\n');

test('a permitted call is forwarded and answered; a low ceiling is refused as an answer', async () => {
  const { core, out, forwarded, stops } = setup();
  core.pushStdout(line({ operation: 'notify', arguments: { message: CANARY } }));
  core.pushStdout(line({ operation: 'publish', arguments: { message: CANARY } }));
  await core.idle();
  assert.deepEqual(out, [
    { allowed: true, result: { content: [{ type: 'text', text: 'ok' }] } },
    { allowed: false, result: { reason: 'sink_ceiling_exceeded' } },
  ]);
  assert.equal(forwarded.length, 1);
  assert.deepEqual(stops, []);
  assert.equal(core.allowed, 1);
  assert.equal(core.denied, 1);
});

test('an unknown operation is refused as an answer', async () => {
  const { core, out, stops } = setup();
  core.pushStdout(line({ operation: 'send_update', arguments: {} }));
  await core.idle();
  assert.deepEqual(out, [{ allowed: false, result: { reason: 'undeclared_tool' } }]);
  assert.deepEqual(stops, []);
});

const violations: Array<[string, Buffer, StopReason]> = [
  ['not JSON', Buffer.from(`hello ${CANARY}\n`), 'malformed_frame'],
  ['an array', line([1]), 'malformed_frame'],
  ['invalid UTF-8', Buffer.from([0x7b, 0xff, 0x7d, 0x0a]), 'malformed_frame'],
  ['a duplicate key', Buffer.from('{"operation":"notify","operation":"publish","arguments":{}}\n'), 'malformed_frame'],
  ['a tool name', line({ operation: 'notify', arguments: {}, tool: 'post_public' }), 'frame_keys'],
  ['a label', line({ operation: 'notify', arguments: {}, label: 'public' }), 'frame_keys'],
  ['a ceiling', line({ operation: 'notify', arguments: {}, ceiling: 'restricted' }), 'frame_keys'],
  ['a call id', line({ operation: 'notify', arguments: {}, id: 1 }), 'frame_keys'],
  ['missing arguments', line({ operation: 'notify' }), 'frame_keys'],
  ['arguments not an object', line({ operation: 'notify', arguments: [] }), 'frame_keys'],
  ['operation not a string', line({ operation: 1, arguments: {} }), 'frame_keys'],
  ['an empty line', Buffer.from('\n'), 'malformed_frame'],
];
for (const [name, bytes, reason] of violations) {
  test(`a frame with ${name} stops the session, nothing forwarded`, async () => {
    const { core, out, forwarded, stops } = setup();
    core.pushStdout(bytes);
    core.pushStdout(line({ operation: 'notify', arguments: { message: CANARY } }));
    await core.idle();
    assert.deepEqual(stops, [reason]);
    assert.equal(forwarded.length, 0);
    assert.equal(out.length, 0);
  });
}

test('a frame above 64 KiB stops the session, even before its newline', () => {
  const { core, stops } = setup();
  core.pushStdout(Buffer.alloc(64 * 1024, 0x20));
  assert.deepEqual(stops, []);
  core.pushStdout(Buffer.from(' '));
  assert.deepEqual(stops, ['frame_too_large']);
});

test('stdout above 1 MiB stops the session', () => {
  const ok = Buffer.from(' '.repeat(1023) + '\n');
  const b = setup();
  b.core.pushStdout(Buffer.concat(Array.from({ length: 1025 }, () => ok)));
  assert.deepEqual(b.stops, ['stdout_limit']);
});

test('stderr is counted, never kept, and bounded at 1 MiB', () => {
  const { core, stops } = setup();
  core.pushStderr(Buffer.alloc(1024 * 1024));
  assert.deepEqual(stops, []);
  core.pushStderr(Buffer.from(CANARY));
  assert.deepEqual(stops, ['stderr_limit']);
  assert.equal(core.stderrBytes, 1024 * 1024 + CANARY.length);
  assert.ok(!JSON.stringify(core).includes(CANARY));
});

test('one call more than --max-calls stops the session', async () => {
  const { core, forwarded, stops } = setup({ maxCalls: 2 });
  for (let i = 0; i < 3; i++) core.pushStdout(line({ operation: 'notify', arguments: { message: `m${i}` } }));
  await core.idle();
  assert.deepEqual(stops, ['max_calls']);
  assert.ok(forwarded.length <= 2);
});

test('a gateway error stops the session', async () => {
  const { core, out, stops } = setup({ failing: true });
  core.pushStdout(line({ operation: 'notify', arguments: { message: CANARY } }));
  await core.idle();
  assert.deepEqual(stops, ['gateway_error']);
  assert.equal(out.length, 0);
});

test('a partial last line at EOF is a malformed frame', () => {
  const { core, stops } = setup();
  core.pushStdout(Buffer.from('{"operation":'));
  core.endStdout();
  assert.deepEqual(stops, ['malformed_frame']);
});

test('live restriction: the in-flight call finishes before the ack; the queued call sees the revocation; restore works', async () => {
  const { core, out, forwarded } = setup({ slowMs: 150 });
  core.pushStdout(line({ operation: 'notify', arguments: { message: 'first' } }));
  core.pushStdout(line({ operation: 'notify', arguments: { message: 'queued-before' } }));
  const ack = core.control(JSON.stringify({ revision: 1, tools: ['post_public'] }));
  core.pushStdout(line({ operation: 'notify', arguments: { message: 'queued-after' } }));
  const r1 = await ack;
  const ackAt = Date.now();
  assert.deepEqual(r1, { ok: true, revision: 1 });
  assert.equal(out.length, 2, 'calls admitted before the update finished before its ack');
  assert.ok(forwarded.every((f) => f.t < ackAt));
  await core.idle();
  assert.deepEqual(out[2], { allowed: false, result: { reason: 'revoked' } });
  assert.deepEqual(forwarded.map((f) => f.args.message), ['first', 'queued-before']);
  assert.deepEqual(await core.control(JSON.stringify({ revision: 2, tools: ['send_update', 'post_public'] })), { ok: true, revision: 2 });
  core.pushStdout(line({ operation: 'notify', arguments: { message: 'restored' } }));
  await core.idle();
  assert.equal(out[3].allowed, true);
});

test('live restriction: invalid and stale updates close admission until a newer valid one', async () => {
  const { core, out } = setup();
  const bad = [
    '{"revision": 0, "tools": []}',
    '{"revision": 1, "tools": ["delete_everything"]}',
    '{"revision": 1, "tools": ["send_update"], "ceiling": "restricted"}',
    '{"revision": 1.5, "tools": []}',
    '{"revision": 1, "tools": "send_update"}',
    'not json',
    '{"revision": 1, "tools": ["send_update", "send_update"]}',
  ];
  for (const u of bad) {
    assert.deepEqual(await core.control(u), { ok: false, closed: true }, u);
    core.pushStdout(line({ operation: 'notify', arguments: { message: 'x' } }));
    await core.idle();
    assert.deepEqual(out.at(-1), { allowed: false, result: { reason: 'admission_closed' } });
  }
  assert.deepEqual(await core.control('{"revision": 3, "tools": ["send_update"]}'), { ok: true, revision: 3 });
  core.pushStdout(line({ operation: 'notify', arguments: { message: 'x' } }));
  await core.idle();
  assert.equal(out.at(-1).allowed, true);
  // stale: not above 3
  assert.deepEqual(await core.control('{"revision": 3, "tools": ["send_update"]}'), { ok: false, closed: true });
  assert.deepEqual(await core.control('{"revision": 2, "tools": ["send_update"]}'), { ok: false, closed: true });
  core.pushStdout(line({ operation: 'notify', arguments: { message: 'x' } }));
  await core.idle();
  assert.deepEqual(out.at(-1), { allowed: false, result: { reason: 'admission_closed' } });
  assert.deepEqual(await core.control('{"revision": 4, "tools": ["send_update"]}'), { ok: true, revision: 4 });
});
