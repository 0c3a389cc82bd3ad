// Backpressure (product.md 7a, issue 12 item 14), through the real binary: a host flooding a
// slow upstream never has more than --max-in-flight calls in flight; past the bound the gate
// stops reading the host until a call ends, and every call is still answered. Counts, not time.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { makeHome, writeFiles, helperScript, tempDir, PERMIT_ALL } from '../helpers/cli.js';
import { RawGate } from '../helpers/raw-gate.js';

/** Send n calls of `tool` at once, as one write; every one must come back with `text`. */
async function flood(gate: RawGate, tool: string, n: number, text: string): Promise<void> {
  let lines = '';
  for (let i = 0; i < n; i++) lines += JSON.stringify({ jsonrpc: '2.0', id: i, method: 'tools/call', params: { name: tool, arguments: tool === 'slow' ? { n: i } : {} } }) + '\n';
  gate.send(lines); // all at once: the gate reads them only as calls end
  const answered = new Set<number>();
  for (let i = 0; i < n; i++) {
    const r = await gate.next();
    assert.equal(r.result?.content?.[0]?.text, text, JSON.stringify(r.error));
    answered.add(r.id);
  }
  assert.equal(answered.size, n);
}

test('a flooding host and a slow upstream: calls in flight stay within --max-in-flight, all are answered', async () => {
  const f = writeFiles({ 'm.yaml': 'version: 1\nrelease: flood@1\ntools:\n  slow: { effect: read, arguments: { n: { type: number } } }\n', 'p.cedar': PERMIT_ALL });
  const peakFile = join(tempDir(), 'peak');
  const gate = new RawGate({
    home: makeHome(),
    manifest: f['m.yaml'],
    policy: f['p.cedar'],
    flags: ['--max-in-flight', '8'],
    upstream: [process.execPath, helperScript('misbehaving-upstream.js')],
    env: { PEAK_FILE: peakFile },
  });
  await gate.initialize();
  await flood(gate, 'slow', 200, 'slow');
  const peak = Number(readFileSync(peakFile, 'utf8'));
  assert.ok(peak <= 8, `the upstream never held more than --max-in-flight calls (held ${peak})`);
  assert.ok(peak >= 2, 'calls did overlap: the bound, not serial reading, kept them few');
  assert.equal(await gate.end(), 0);
});

test('without --max-in-flight the bound is 256: an upstream holding every call it gets holds 256', async () => {
  const f = writeFiles({ 'm.yaml': 'version: 1\nrelease: flood@1\ntools:\n  gather: { effect: read, arguments: {} }\n', 'p.cedar': PERMIT_ALL });
  const peakFile = join(tempDir(), 'peak');
  const gate = new RawGate({ home: makeHome(), manifest: f['m.yaml'], policy: f['p.cedar'], upstream: [process.execPath, helperScript('misbehaving-upstream.js')], env: { PEAK_FILE: peakFile } });
  await gate.initialize();
  await flood(gate, 'gather', 300, 'gathered');
  assert.equal(Number(readFileSync(peakFile, 'utf8')), 256);
  assert.equal(await gate.end(), 0);
});

test('--max-in-flight must be a positive integer', async () => {
  const { cloakpipe } = await import('../helpers/cli.js');
  const r = cloakpipe(['mcp-proxy', '--manifest', 'm', '--policy', 'p', '--max-in-flight', '0', '--', 'true']);
  assert.equal(r.status, 2);
  assert.match(r.stderr, /--max-in-flight must be a positive integer/);
});
