// Start-up refuses a home it cannot trust to be its own (product.md 7a), through the real binary.
// Each case first runs a write that succeeds (the upstream records it), then damages the home the
// way the fault injection did, then starts the gate again with the same write: the gate must exit
// 2 naming the reason, spawn nothing, and the upstream must still have run the write once.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, copyFileSync, existsSync, readFileSync, rmSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { spawnSync } from 'node:child_process';
import { CLI, cloakpipe, helperScript, tempDir } from '../helpers/cli.js';
import { call, keygen, records, setup, startGate, type Setup } from '../helpers/recording-gate.js';

const WRITE = { text: 'pay invoice 4471', key: 'inv-4471' };
const notes = (s: Setup) => records(s).filter((r) => r.tool === 'write_note');

/** A home whose write `inv-4471` succeeded once, the gate closed again. */
async function homeWithSucceededWrite(): Promise<Setup> {
  const s = setup();
  const g = await startGate(s);
  try {
    const r = await call(g, 'write_note', WRITE);
    assert.ok(r.ok, JSON.stringify(r));
    const again = await call(g, 'write_note', WRITE);
    assert.ok(again.ok, 'the same write, same id: answered from the store');
  } finally {
    await g.close();
  }
  assert.equal(notes(s).length, 1);
  return s;
}

/** Start the gate again and send the same write; the marker says whether the upstream was spawned. */
function restartWithSameWrite(s: Setup) {
  const lines = [
    { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } },
    { jsonrpc: '2.0', method: 'notifications/initialized' },
    { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'write_note', arguments: WRITE } },
  ];
  const r = cloakpipe(
    ['mcp-proxy', '--home', s.home, '--manifest', s.manifest, '--policy', s.policy, '--context', s.context, '--', process.execPath, helperScript('upstream.js')],
    { input: lines.map((l) => JSON.stringify(l)).join('\n') + '\n', env: { ...process.env, UPSTREAM_TOOLS: 'approvals', RECORD_FILE: s.record } },
  );
  return r;
}

function assertRefused(s: Setup, r: ReturnType<typeof restartWithSameWrite>, reason: RegExp) {
  assert.equal(r.status, 2, `exit status (stderr: ${r.stderr})`);
  assert.match(r.stderr, reason);
  assert.equal(r.stdout, '', 'nothing reached the host');
  assert.equal(notes(s).length, 1, 'the succeeded write never ran a second time');
}

const sidecars = (path: string) => [`${path}-wal`, `${path}-shm`].forEach((p) => rmSync(p, { force: true }));

for (const { file, title, refusal, untouched } of [
  {
    file: 'operations.db',
    title: 'an emptied (0-byte) operations.db is refused, never re-created: the succeeded write does not run again',
    refusal: /operations database .*operations\.db does not hold the gate's schema/,
    untouched: 'the file was left as found',
  },
  { file: 'ledger.db', title: 'an emptied (0-byte) ledger.db is refused: no new ledger starting at seq 0', refusal: /ledger database .*ledger\.db does not hold the gate's schema/, untouched: undefined },
]) {
  test(title, async () => {
    const s = await homeWithSucceededWrite();
    const path = join(s.home, file);
    truncateSync(path, 0);
    sidecars(path);
    assertRefused(s, restartWithSameWrite(s), refusal);
    assert.equal(statSync(path).size, 0, untouched);
  });
}

test('two zeroed bytes in the operations index are refused (the lookup would miss the succeeded write)', async () => {
  const s = await homeWithSucceededWrite();
  const path = join(s.home, 'operations.db');
  const db = new Database(path);
  db.pragma('wal_checkpoint(TRUNCATE)');
  const { rootpage } = db.prepare("SELECT rootpage FROM sqlite_master WHERE name = 'sqlite_autoindex_operations_1'").get() as { rootpage: number };
  const pageSize = db.pragma('page_size', { simple: true }) as number;
  // Without the damage, the id is found through that index.
  assert.ok(db.prepare('SELECT 1 FROM operations WHERE id = ?').get(WRITE.key));
  db.close();
  sidecars(path);
  const buf = readFileSync(path);
  const page = (rootpage - 1) * pageSize;
  assert.equal(buf[page], 0x0a, 'a leaf index page');
  const cell = page + buf.readUInt16BE(page + 8); // the first cell: payload size, record header, key
  const keyAt = cell + 1 + buf[cell + 1]; // both varints are one byte for a short key
  assert.equal(buf.subarray(keyAt, keyAt + WRITE.key.length).toString(), WRITE.key, 'the key bytes of the index cell');
  buf[keyAt + 1] = 0;
  buf[keyAt + 2] = 0;
  writeFileSync(path, buf);
  const check = new Database(path, { readonly: true });
  assert.equal(check.prepare('SELECT 1 FROM operations WHERE id = ?').get(WRITE.key), undefined, 'the damage makes the lookup miss');
  check.close();
  assertRefused(s, restartWithSameWrite(s), /operations database .* is damaged \(PRAGMA integrity_check/);
});

test('a replaced gate.key is refused: the ledger was signed by another key', async () => {
  const s = await homeWithSucceededWrite();
  keygen(join(s.dir, 'other'));
  const key = join(s.home, 'gate.key');
  rmSync(key);
  copyFileSync(join(s.dir, 'other.key'), key);
  chmodSync(key, 0o600);
  // The key is not gate.pub's: refused before the ledger is read.
  assertRefused(s, restartWithSameWrite(s), /the gate key .* is not the key of this home's .*gate\.pub/);
  // Both halves replaced, a pair again: the ledger tells, its newest entry signed by the old key.
  copyFileSync(join(s.dir, 'other.pub'), join(s.home, 'gate.pub'));
  assertRefused(s, restartWithSameWrite(s), /newest ledger entry \(seq \d+\) is not signed by this home's gate key/);
});

test('init after the key was lost refuses to create a new key beside the existing ledger', async () => {
  const s = await homeWithSucceededWrite();
  rmSync(join(s.home, 'gate.key'));
  const r = cloakpipe(['init', '--home', s.home]);
  assert.equal(r.status, 2);
  assert.match(r.stderr, /refusing to create a new key beside an existing ledger database/);
  assert.equal(existsSync(join(s.home, 'gate.key')), false, 'no key was created');
  assertRefused(s, restartWithSameWrite(s), /gate key/);
});

test('a home readable by others is refused', async () => {
  const s = await homeWithSucceededWrite();
  chmodSync(s.home, 0o755);
  assertRefused(s, restartWithSameWrite(s), /home .* is readable by others \(mode 0755; it must be 0700/);
  chmodSync(s.home, 0o700);
});

test('a gate key readable by others is refused', async () => {
  const s = await homeWithSucceededWrite();
  chmodSync(join(s.home, 'gate.key'), 0o640);
  assertRefused(s, restartWithSameWrite(s), /readable by its group \(mode must be 0600\): it is 0640; chmod 600 /);
});

test('init makes the home 0700 and every file in it 0600, even under umask 000', () => {
  const home = join(tempDir(), 'home');
  const r = spawnSync('sh', ['-c', 'umask 000; exec "$0" "$@"', process.execPath, CLI, 'init', '--home', home], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  const mode = (p: string) => statSync(join(home, p)).mode & 0o777;
  assert.equal(statSync(home).mode & 0o777, 0o700);
  assert.equal(mode('approvals'), 0o700);
  for (const f of ['gate.key', 'gate.pub', 'ledger.db', 'operations.db']) assert.equal(mode(f), 0o600, f);
});
