// A call's decision span and log line are made once the door has its outcome, not on the way to
// it (issue 16): the host is answered first. Each call is still reported exactly once, with the
// outcome the door was given, also when the gate is closed right after the last answer; and the
// result entry, now built after the answer left, holds the digest of the answer the host got.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openGate } from '../../src/gate/open.js';
import { setLogSink } from '../../src/telemetry/log.js';
import { digestJson } from '../../src/core/digest.js';
import type { CallOutcome, UpstreamReply } from '../../src/core/outcome.js';
import { makeHome, PERMIT_ALL, writeFiles } from '../helpers/cli.js';
import { ledgerOf } from '../helpers/support-desk.js';

const MANIFEST = `version: 1
release: decision-report@1
tools:
  lookup:
    effect: read
    arguments:
      key: { type: string, max_len: 64 }
`;

const reply = (key: string): UpstreamReply => ({ result: { content: [{ type: 'text', text: `value of ${key}` }] } });
const answered = (key: string) => () => new Promise<UpstreamReply>((r) => setTimeout(() => r(reply(key)), 0));
const failed = () => Promise.resolve<UpstreamReply>({ error: { code: -32000, message: 'no such key' } });

async function withGate(fn: (g: Awaited<ReturnType<typeof openGate>>, lines: Record<string, unknown>[]) => Promise<void>): Promise<string> {
  const home = makeHome();
  const f = writeFiles({ 'm.yaml': MANIFEST, 'p.cedar': PERMIT_ALL });
  const lines: Record<string, unknown>[] = [];
  setLogSink((line) => lines.push(JSON.parse(line) as Record<string, unknown>));
  try {
    const opened = await openGate({ home, manifestPath: f['m.yaml'], policyPath: f['p.cedar'], mode: 'enforce', approverKeys: [], callTimeoutMs: 5000 });
    await fn(opened, lines);
  } finally {
    setLogSink(null);
  }
  return home;
}

const decisions = (lines: Record<string, unknown>[]) => lines.filter((l) => l.event === 'decision');
const entryOf = (o: CallOutcome) => (o.kind === 'refused' ? o.data.entry : o.entry);

test('a decision is reported after the door has its outcome, once, with that outcome and its timings', async () => {
  await withGate(async (opened, lines) => {
    try {
      const outcome = await opened.gate.handleCall({ tool: 'lookup', arguments: { key: 'a' }, meta: {} }, answered('a'));
      assert.equal(outcome.kind, 'forwarded');
      // The door writes the outcome in this turn; the report comes in the next one.
      assert.equal(decisions(lines).length, 0);
      await new Promise((r) => setImmediate(r));
      const [line, ...more] = decisions(lines);
      assert.deepEqual(more, []);
      assert.equal(line.outcome, 'allow');
      assert.equal(line.tool, 'lookup');
      assert.equal(line.entry, entryOf(outcome));
      for (const k of ['decide_ms', 'commit_ms', 'upstream_ms']) assert.equal(typeof line[k], 'number', k);
    } finally {
      await opened.close('test');
    }
  });
});

test('calls at once, a refused one among them, and a close right after the last answer: every decision is reported once', async () => {
  const outcomes: CallOutcome[] = [];
  const home = await withGate(async (opened, lines) => {
    const { gate } = opened;
    const calls = Array.from({ length: 16 }, (_, i) => gate.handleCall({ tool: 'lookup', arguments: { key: `k${i}` }, meta: {} }, answered(`k${i}`)));
    calls.push(gate.handleCall({ tool: 'lookup', arguments: { key: 'missing' }, meta: {} }, failed));
    calls.push(gate.handleCall({ tool: 'not_declared', arguments: {}, meta: {} }, answered('x')));
    outcomes.push(...(await Promise.all(calls)));
    // In the same turn as the last answer, and before the reports' own turn comes: the close
    // makes every waiting report at once, whatever it then waits for (under load its commit
    // could come back before that turn, and a process exiting then lost the last reports).
    const closing = opened.close('test');
    const reported = decisions(lines);
    await closing;
    assert.equal(decisions(lines).length, reported.length, 'no report twice');
    assert.equal(reported.length, outcomes.length);
    assert.deepEqual(reported.map((l) => l.entry).sort(), outcomes.map(entryOf).sort());
    assert.deepEqual(
      reported.map((l) => l.outcome).sort(),
      [...Array(17).fill('allow'), 'refuse'].sort(),
    );
  });
  assert.equal(outcomes.at(-1)!.kind, 'refused');
  // Each forwarded call's result entry names its decision and digests the answer the host got.
  const entries = ledgerOf(home);
  for (const [i, o] of outcomes.slice(0, 17).entries()) {
    assert.equal(o.kind, 'forwarded');
    const result = entries.find((e) => e.kind === 'result' && e.decision === entryOf(o));
    const sent = i < 16 ? reply(`k${i}`).result : { code: -32000, message: 'no such key' };
    assert.equal(result?.result_digest, digestJson(sent), `call ${i}`);
    assert.equal(result?.outcome, i < 16 ? 'ok' : 'error');
  }
});

test('an answer the ledger cannot digest (no door passes one: NaN is not JSON) leaves its result unrecorded and the gate serving', async () => {
  const home = await withGate(async (opened, lines) => {
    try {
      const odd = await opened.gate.handleCall({ tool: 'lookup', arguments: { key: 'odd' }, meta: {} }, () => Promise.resolve({ result: { n: Number.NaN } }));
      assert.equal(odd.kind, 'forwarded'); // the host already has it: withholding it undoes nothing
      await new Promise((r) => setTimeout(r, 20)); // past the seal ahead and the later group
      const next = await opened.gate.handleCall({ tool: 'lookup', arguments: { key: 'b' }, meta: {} }, answered('b'));
      assert.equal(next.kind, 'forwarded');
      await new Promise((r) => setImmediate(r));
      assert.equal(decisions(lines).length, 2);
    } finally {
      await opened.close('test');
    }
  });
  const entries = ledgerOf(home);
  assert.deepEqual(entries.filter((e) => e.kind === 'result').map((e) => e.outcome), ['ok']);
});
