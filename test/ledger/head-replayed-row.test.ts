// The gate's start-up check refuses a newest ledger row that holds another entry than the one its
// key says: an older entry's signed body copied in as a new last row (a replay) carries the key's
// valid signature, so the check passed, the gate started, and then every call was refused
// fail_closed (its next entry's seq was taken) with nothing said at start. Through the real binary.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { cloakpipe, helperScript } from '../helpers/cli.js';
import { call, records, setup, startGate } from '../helpers/recording-gate.js';

test('a newest ledger row holding a copy of an older signed entry stops the gate at start', async () => {
  const s = setup();
  const g = await startGate(s, { delayMs: 0 });
  assert.equal((await call(g, 'write_note', { text: 'before', key: 'k-before' })).ok, true);
  await g.close();

  const db = new Database(join(s.home, 'ledger.db'));
  const last = (db.prepare('SELECT max(seq) AS m FROM entries').get() as { m: number }).m;
  // Entry 1, signed by this home's key, replayed as the row after the last.
  db.prepare('INSERT INTO entries (seq, ts, kind, hash, body) SELECT ?, ts, kind, hash, body FROM entries WHERE seq = 1').run(last + 1);
  db.close();

  const lines = [
    { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } },
    { jsonrpc: '2.0', method: 'notifications/initialized' },
    { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'write_note', arguments: { text: 'after', key: 'k-after' } } },
  ];
  const r = cloakpipe(
    ['mcp-proxy', '--home', s.home, '--manifest', s.manifest, '--policy', s.policy, '--context', s.context, '--', process.execPath, helperScript('upstream.js')],
    { input: lines.map((l) => JSON.stringify(l)).join('\n') + '\n', env: { ...process.env, UPSTREAM_TOOLS: 'approvals', RECORD_FILE: s.record } },
  );
  assert.equal(r.status, 2, `exit status (stderr: ${r.stderr})`);
  assert.match(r.stderr, new RegExp(`the newest ledger row \\(seq ${last + 1}\\) holds entry 1`));
  assert.doesNotMatch(r.stderr, /\n\s+at /);
  assert.equal(r.stdout, '', 'nothing reached the host');
  assert.deepEqual(records(s).map((w) => w.arguments.key), ['k-before'], 'no call ran after the replay');
});
