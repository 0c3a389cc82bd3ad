// A host's request ids are held for the request's life (and remembered once given up on), and
// neither JSON-RPC nor MCP bounds their size: 64 calls in flight with 4 MiB ids grew the gate by
// most of a gigabyte (256, the default --max-in-flight, by some 3 GiB). An id longer than 1 KiB
// is now refused invalid_request, recorded by the line's digest, answered with a null id (ADR
// 108); a 1 KiB id still goes through. Real binary, raw host lines, a server that never answers.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { helperScript, makeHome, writeFiles, PERMIT_ALL } from '../helpers/cli.js';
import { ledgerOf } from '../helpers/gate.js';
import { RawGate } from '../helpers/raw-gate.js';
import { rss } from '../helpers/proc-figures.js';

const MANIFEST = `version: 1
release: long-id@1
tools:
  hang: { effect: read, arguments: {} }
`;
const MIB = 1024 * 1024;
const CALLS = 64;
const CANARY = 'LONG-ID-CANARY-5d1f';

test('calls with 4 MiB ids are refused, not held: the gate stays small; a 1 KiB id is served', { timeout: 300_000 }, async () => {
  const f = writeFiles({ 'm.yaml': MANIFEST, 'p.cedar': PERMIT_ALL });
  const home = makeHome();
  const gate = new RawGate({ home, manifest: f['m.yaml'], policy: f['p.cedar'], upstream: [process.execPath, helperScript('upstream.js')] });
  await gate.initialize();
  const pid = gate.child.pid!;
  const before = rss(pid);
  for (let k = 0; k < CALLS; k++) {
    const id = `${CANARY}-${k}-${String(k % 10).repeat(4 * MIB - 200)}`;
    gate.send(JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'hang', arguments: {} } }) + '\n');
  }
  // The last id of the largest size taken: its 1,024 bytes are its JSON form, quotes included.
  const largest = 'x'.repeat(1022);
  gate.send(JSON.stringify({ jsonrpc: '2.0', id: largest, method: 'ping' }) + '\n');
  const refusals: any[] = [];
  for (;;) {
    const m = await gate.next(120_000);
    if (m.id === largest) break;
    refusals.push(m);
  }
  const grown = rss(pid) - before;
  assert.equal(refusals.length, CALLS, 'each long id is answered');
  for (const r of refusals) {
    assert.equal(r.id, null, 'the long id is not echoed back');
    assert.equal(r.error.code, -32600);
    assert.equal(r.error.data.reason, 'invalid_request');
    assert.equal(r.error.data.detail, 'the id is longer than 1024 bytes');
  }
  assert.ok(grown < 256 * MIB, `the gate grew by ${Math.round(grown / MIB)} MiB with ${CALLS} calls of 4 MiB ids in flight`);
  gate.send(JSON.stringify({ jsonrpc: '2.0', id: 'x' + largest, method: 'ping' }) + '\n');
  assert.equal((await gate.next(60_000)).id, null, 'one byte more is refused');
  await gate.end();

  const refused = ledgerOf(home).filter((e) => e.reason === 'invalid_request');
  assert.equal(refused.length, CALLS + 1, 'every refusal is recorded');
  assert.ok(refused.every((e) => /^sha256:[0-9a-f]{64}$/.test(e.line_digest)), 'by the line digest');
  for (const file of readdirSync(home, { recursive: true }) as string[]) {
    const path = join(home, file);
    if (statSync(path).isFile()) assert.ok(!readFileSync(path).includes(CANARY), `no id in ${file}`);
  }
  assert.ok(!gate.stderr.includes(CANARY), 'no id in the log');
});
