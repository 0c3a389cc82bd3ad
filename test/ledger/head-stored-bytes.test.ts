// The gate's start-up check reads the newest ledger row as strictly as verify does: a row whose
// stored bytes are not the UTF-8 of the text that was signed stops the start, through the real
// binary. The newest entry here is a refusal in a task whose id (the operator's context) holds
// U+FFFD, the gate killed right after recording it; those three bytes rewritten in ledger.db as
// bytes that are not UTF-8 still read back as U+FFFD through a lenient decoder, so the entry's
// signature checked and the gate started on a row no byte-wise reader reads as signed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { cloakpipe, helperScript } from '../helpers/cli.js';
import { call, records, setup, startGate } from '../helpers/recording-gate.js';

const TASK = 'T-\uFFFD-77';

test('a newest ledger row stored as bytes that are not UTF-8 stops the gate at start, whatever a lenient decoder reads', async () => {
  const s = setup();
  writeFileSync(s.context, JSON.stringify({ task: { id: TASK } }));
  const g = await startGate(s, { delayMs: 0 });
  const refused = await call(g, 'transfer_funds', {});
  assert.equal(refused.ok, false, JSON.stringify(refused));
  process.kill(g.pid, 'SIGKILL');
  await g.close();

  const db = new Database(join(s.home, 'ledger.db'));
  const newest = db.prepare('SELECT seq, CAST(body AS BLOB) AS b FROM entries ORDER BY seq DESC LIMIT 1').get() as { seq: number; b: Buffer };
  const at = newest.b.indexOf(Buffer.from(TASK, 'utf8'));
  assert.ok(at >= 0, 'the newest entry is the refusal in that task');
  // U+FFFD (EF BF BD) as C0: not UTF-8; a byte-wise reader sees another task id.
  const forged = Buffer.concat([newest.b.subarray(0, at + 2), Buffer.from([0xc0]), newest.b.subarray(at + 5)]);
  db.prepare('UPDATE entries SET body = CAST(? AS TEXT) WHERE seq = ?').run(forged, newest.seq);
  db.close();

  const lines = [
    { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } },
    { jsonrpc: '2.0', method: 'notifications/initialized' },
    { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'write_note', arguments: { text: 'after the forgery', key: 'k-after' } } },
  ];
  const r = cloakpipe(
    ['mcp-proxy', '--home', s.home, '--manifest', s.manifest, '--policy', s.policy, '--context', s.context, '--', process.execPath, helperScript('upstream.js')],
    { input: lines.map((l) => JSON.stringify(l)).join('\n') + '\n', env: { ...process.env, UPSTREAM_TOOLS: 'approvals', RECORD_FILE: s.record } },
  );
  assert.equal(r.status, 2, `exit status (stderr: ${r.stderr})`);
  assert.match(r.stderr, new RegExp(`ledger entry ${newest.seq} is stored as bytes that are not UTF-8`));
  assert.doesNotMatch(r.stderr, /\n\s+at /);
  assert.equal(r.stdout, '', 'nothing reached the host');
  assert.equal(records(s).filter((w) => w.tool === 'write_note').length, 0, 'no call ran');
  const after = new Database(join(s.home, 'ledger.db'), { readonly: true });
  assert.equal((after.prepare('SELECT max(seq) AS m FROM entries').get() as { m: number }).m, newest.seq, 'nothing appended after the forged row');
  after.close();
});
