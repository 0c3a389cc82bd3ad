// The bridge's decision loop without Docker, over the real gate: frames, bounds, replies, stops,
// the ordering of live restrictions with calls, and every refusal a ledger entry.
import { test, type TestContext } from 'node:test';
import { join } from 'node:path';
import assert from 'node:assert/strict';
import { BridgeCore } from '../../src/confine/core.js';
import type { StopReason } from '../../src/confine/frames.js';
import type { JsonObject } from '../../src/core/json.js';
import { ALIASES, APPROVAL_MANIFEST, freshConfineGate, throughGate } from './fixtures/session.js';
import { cloakpipe, tempDir, writeFiles } from '../helpers/cli.js';
import { keygen } from '../helpers/recording-gate.js';

const CANARY = 'CANARY-core-' + Math.random().toString(36).slice(2);

async function setup(t: TestContext, opts: { maxCalls?: number; slowMs?: number; failing?: boolean; manifest?: string; approverKeys?: string[] } = {}) {
  const out: any[] = [];
  const forwarded: Array<{ tool: string; args: JsonObject; t: number }> = [];
  const stops: StopReason[] = [];
  const { gate, home, files } = await freshConfineGate({ manifest: opts.manifest, approverKeys: opts.approverKeys });
  let closed = false;
  const close = async () => {
    if (!closed) await gate.close('test');
    closed = true;
  };
  t.after(close);
  const core = new BridgeCore({
    aliases: ALIASES,
    gate,
    call: throughGate(gate, async (tool, args) => {
      if (opts.failing) throw new Error('the upstream is gone');
      forwarded.push({ tool, args, t: Date.now() });
      if (opts.slowMs) await new Promise((r) => setTimeout(r, opts.slowMs));
      return { result: { content: [{ type: 'text', text: 'ok' }] } };
    }),
    maxCalls: opts.maxCalls ?? 16,
    writeToAgent: (l) => out.push(JSON.parse(l)),
    onStop: (r) => stops.push(r),
  });
  /** Close the gate, check the whole ledger with `cloakpipe verify`, return its entries. */
  const ledger = async (): Promise<any[]> => {
    await close();
    const v = cloakpipe(['verify', '--home', home]);
    assert.equal(v.status, 0, `verify: ${v.stdout}${v.stderr}`);
    const show = cloakpipe(['ledger', 'show', '--json', '--home', home]);
    assert.equal(show.status, 0, show.stderr);
    assert.ok(!show.stdout.includes(CANARY), 'no argument value in the ledger');
    return show.stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l));
  };
  return { core, out, forwarded, stops, ledger, home, context: files.context };
}

const refusals = (entries: any[]) => entries.filter((e) => e.kind === 'decision' && e.outcome === 'refuse').map((e) => e.reason);

const line = (o: unknown) => Buffer.from(JSON.stringify(o) + '\n');

test('a permitted call is forwarded and answered; a low ceiling is refused as an answer and recorded', async (t) => {
  const { core, out, forwarded, stops, ledger } = await setup(t);
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
  const entries = await ledger();
  const decisions = entries.filter((e) => e.kind === 'decision');
  assert.deepEqual(decisions.map((e) => [e.outcome, e.tool, e.reason ?? null]), [
    ['allow', 'send_update', null],
    ['refuse', 'post_public', 'sink_ceiling_exceeded'],
  ]);
});

test('an operation the alias file does not declare is the gate\'s undeclared_tool, even when it is a tool name', async (t) => {
  const { core, out, stops, forwarded, ledger } = await setup(t);
  core.pushStdout(line({ operation: 'send_update', arguments: { message: CANARY } }));
  core.pushStdout(line({ operation: CANARY, arguments: {} }));
  await core.idle();
  assert.deepEqual(out, [
    { allowed: false, result: { reason: 'undeclared_tool' } },
    { allowed: false, result: { reason: 'undeclared_tool' } },
  ]);
  assert.deepEqual(stops, []);
  assert.equal(forwarded.length, 0);
  const decisions = (await ledger()).filter((e) => e.kind === 'decision');
  assert.deepEqual(refusals(decisions), ['undeclared_tool', 'undeclared_tool']);
  for (const d of decisions) {
    assert.equal(d.tool, undefined, 'the agent\'s text is never recorded as a tool name');
    assert.match(d.tool_digest, /^sha256:[0-9a-f]{64}$/);
  }
});

const violations: Array<[string, Buffer, StopReason, string]> = [
  ['not JSON', Buffer.from(`hello ${CANARY}\n`), 'malformed_frame', 'malformed_json'],
  ['an array', line([1]), 'malformed_frame', 'invalid_request'],
  ['invalid UTF-8', Buffer.from([0x7b, 0xff, 0x7d, 0x0a]), 'malformed_frame', 'malformed_json'],
  ['a duplicate key', Buffer.from('{"operation":"notify","operation":"publish","arguments":{}}\n'), 'malformed_frame', 'duplicate_key'],
  ['a tool name', line({ operation: 'notify', arguments: {}, tool: 'post_public' }), 'frame_keys', 'invalid_request'],
  ['a label', line({ operation: 'notify', arguments: {}, label: 'public' }), 'frame_keys', 'invalid_request'],
  ['a ceiling', line({ operation: 'notify', arguments: {}, ceiling: 'restricted' }), 'frame_keys', 'invalid_request'],
  ['a call id', line({ operation: 'notify', arguments: {}, id: 1 }), 'frame_keys', 'invalid_request'],
  ['missing arguments', line({ operation: 'notify' }), 'frame_keys', 'invalid_request'],
  ['arguments not an object', line({ operation: 'notify', arguments: [] }), 'frame_keys', 'invalid_request'],
  ['operation not a string', line({ operation: 1, arguments: {} }), 'frame_keys', 'invalid_request'],
  ['an empty line', Buffer.from('\n'), 'malformed_frame', 'malformed_json'],
];
for (const [name, bytes, reason, code] of violations) {
  test(`a frame with ${name} stops the session, nothing forwarded, the gate records it ${code}`, async (t) => {
    const { core, out, forwarded, stops, ledger } = await setup(t);
    core.pushStdout(bytes);
    core.pushStdout(line({ operation: 'notify', arguments: { message: CANARY } }));
    await core.idle();
    assert.deepEqual(stops, [reason]);
    assert.equal(forwarded.length, 0);
    assert.equal(out.length, 0);
    const decisions = (await ledger()).filter((e) => e.kind === 'decision');
    assert.deepEqual(decisions.map((e) => [e.outcome, e.reason]), [['refuse', code]]);
    assert.match(decisions[0].line_digest, /^sha256:[0-9a-f]{64}$/);
  });
}

test('a frame above 64 KiB stops the session, even before its newline, and is recorded frame_too_large', async (t) => {
  const { core, stops, ledger } = await setup(t);
  core.pushStdout(Buffer.alloc(64 * 1024, 0x20));
  assert.deepEqual(stops, []);
  core.pushStdout(Buffer.from(' '));
  assert.deepEqual(stops, ['frame_too_large']);
  await core.idle();
  assert.deepEqual(refusals(await ledger()), ['frame_too_large']);
});

test('stdout above 1 MiB stops the session', async (t) => {
  const ok = Buffer.from(' '.repeat(1023) + '\n');
  const b = await setup(t);
  b.core.pushStdout(Buffer.concat(Array.from({ length: 1025 }, () => ok)));
  assert.deepEqual(b.stops, ['stdout_limit']);
});

test('stderr is counted, never kept, and bounded at 1 MiB', async (t) => {
  const { core, stops } = await setup(t);
  core.pushStderr(Buffer.alloc(1024 * 1024));
  assert.deepEqual(stops, []);
  core.pushStderr(Buffer.from(CANARY));
  assert.deepEqual(stops, ['stderr_limit']);
  assert.equal(core.stderrBytes, 1024 * 1024 + CANARY.length);
  assert.ok(!JSON.stringify(core).includes(CANARY));
});

test('one call more than --max-calls stops the session', async (t) => {
  const { core, forwarded, stops } = await setup(t, { maxCalls: 2 });
  for (let i = 0; i < 3; i++) core.pushStdout(line({ operation: 'notify', arguments: { message: `m${i}` } }));
  await core.idle();
  assert.deepEqual(stops, ['max_calls']);
  assert.ok(forwarded.length <= 2);
});

test('a gateway error stops the session', async (t) => {
  const { core, out, stops } = await setup(t, { failing: true });
  core.pushStdout(line({ operation: 'notify', arguments: { message: CANARY } }));
  await core.idle();
  assert.deepEqual(stops, ['gateway_error']);
  assert.equal(out.length, 0);
});

test('a partial last line at EOF is a malformed frame, recorded malformed_json', async (t) => {
  const { core, stops, ledger } = await setup(t);
  core.pushStdout(Buffer.from('{"operation":'));
  core.endStdout();
  assert.deepEqual(stops, ['malformed_frame']);
  await core.idle();
  assert.deepEqual(refusals(await ledger()), ['malformed_json']);
});

test('live restriction: the in-flight call finishes before the ack; the queued call sees the revocation; restore works', async (t) => {
  const { core, out, forwarded, ledger } = await setup(t, { slowMs: 150 });
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
  const entries = await ledger();
  const decisions = entries.filter((e) => e.kind === 'decision');
  assert.deepEqual(decisions.map((e) => [e.outcome, e.reason ?? null, e.admission_revision]), [
    ['allow', null, 0],
    ['allow', null, 0],
    ['refuse', 'revoked', 1],
    ['allow', null, 2],
  ]);
  const updates = entries.filter((e) => e.kind === 'operator' && e.action === 'restrict');
  assert.deepEqual(updates.map((e) => [e.accepted, e.admission, e.revision, e.tools]), [
    [true, 'open', 1, ['post_public']],
    [true, 'open', 2, ['post_public', 'send_update']],
  ]);
});

test('live restriction: invalid and stale updates close admission until a newer valid one', async (t) => {
  const { core, out, ledger } = await setup(t);
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
  const entries = await ledger();
  assert.deepEqual(refusals(entries), Array(bad.length + 1).fill('admission_closed'));
  const updates = entries.filter((e) => e.kind === 'operator' && e.action === 'restrict');
  assert.deepEqual(updates.map((e) => [e.accepted, e.admission, e.revision]), [
    ...bad.map(() => [false, 'closed', 0]),
    [true, 'open', 3],
    [false, 'closed', 3],
    [false, 'closed', 3],
    [true, 'open', 4],
  ]);
  for (const u of updates) assert.match(u.line_digest, /^sha256:[0-9a-f]{64}$/);
});

test('approval inside confinement: refused without a receipt; a receipt from an --approver-key in the inbox lets that one call through, once', async (t) => {
  const keys = join(tempDir('cp-confine-approver-'), 'approver');
  keygen(keys);
  const { core, out, forwarded, home, context, ledger } = await setup(t, { manifest: APPROVAL_MANIFEST, approverKeys: [`${keys}.pub`] });
  const notify = (message: string) => core.pushStdout(line({ operation: 'notify', arguments: { message } }));
  const approve = (message: string) => {
    const call = writeFiles({ 'call.json': { tool: 'send_update', arguments: { message } } })['call.json'];
    const r = cloakpipe(['approve', '--key', `${keys}.key`, '--call', call, '--context', context, '--home', home, '--yes']);
    assert.equal(r.status, 0, r.stderr);
  };
  notify(CANARY);
  await core.idle();
  assert.deepEqual(out.at(-1), { allowed: false, result: { reason: 'approval_required' } });
  approve(CANARY);
  notify(CANARY);
  await core.idle();
  assert.equal(out.at(-1).allowed, true);
  // The receipt is spent: another call (a different message) needs its own approval.
  notify(`${CANARY}-2`);
  await core.idle();
  assert.deepEqual(out.at(-1), { allowed: false, result: { reason: 'approval_required' } });
  assert.deepEqual(forwarded.map((f) => f.args.message), [CANARY]);
  const decisions = (await ledger()).filter((e) => e.kind === 'decision');
  assert.deepEqual(decisions.map((e) => [e.reason ?? e.outcome, e.approval ?? null]), [
    ['approval_required', null],
    ['allow', 'inbox'],
    ['approval_required', null],
  ]);
});

test('approval inside confinement without --approver-key: a receipt in the inbox is from an unknown approver', async (t) => {
  const keys = join(tempDir('cp-confine-approver-'), 'approver');
  keygen(keys);
  const { core, out, forwarded, home, context } = await setup(t, { manifest: APPROVAL_MANIFEST });
  const call = writeFiles({ 'call.json': { tool: 'send_update', arguments: { message: CANARY } } })['call.json'];
  assert.equal(cloakpipe(['approve', '--key', `${keys}.key`, '--call', call, '--context', context, '--home', home, '--yes']).status, 0);
  core.pushStdout(line({ operation: 'notify', arguments: { message: CANARY } }));
  await core.idle();
  assert.deepEqual(out.at(-1), { allowed: false, result: { reason: 'approval_invalid' } });
  assert.equal(forwarded.length, 0);
});
