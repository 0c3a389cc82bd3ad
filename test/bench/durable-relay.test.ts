// The durable relay is the measured floor of issue 16's latency targets (docs/performance.md):
// it is only a floor if it does the work it claims. Each line from the host is committed, signed,
// before the upstream receives it; lines go through unchanged both ways; no payload is stored.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import Database from 'better-sqlite3';
import { helperScript, ROOT } from '../helpers/cli.js';

const RELAY = join(ROOT, 'dist/bench/durable-relay.js');
const UPSTREAM = join(ROOT, 'dist/bench/upstream.js');

/** Runs `lines` one at a time through `argv`, each reply awaited before the next line. */
async function session(argv: string[], lines: string[], env: NodeJS.ProcessEnv = process.env): Promise<string[]> {
  const child = spawn(process.execPath, argv, { stdio: ['pipe', 'pipe', 'inherit'], env });
  const replies = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const out: string[] = [];
  for (const line of lines) {
    child.stdin.write(line + '\n');
    const r = await replies.next();
    assert.ok(!r.done, 'the path closed before replying');
    out.push(r.value as string);
  }
  child.stdin.end();
  await new Promise((res) => child.once('exit', res));
  return out;
}

const call = (id: number, message: string) => JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'echo', arguments: { message } } });

test('durable relay: each host line is committed before the upstream receives it (also without its fsync, and with two records a line)', async () => {
  for (const [flags, perLine] of [[[], 1], [['--no-fsync'], 1], [['--records', '2'], 2]] as const) {
    const db = join(mkdtempSync(join(tmpdir(), 'durable-relay-')), 'floor.db');
    const replies = await session([RELAY, '--db', db, ...flags, '--', process.execPath, helperScript('record-counting-upstream.js')], Array.from({ length: 20 }, (_, i) => call(i + 1, 'x')), { ...process.env, RECORDS_DB: db });
    assert.deepEqual(replies.map((r) => (JSON.parse(r) as { result: { records: number } }).result.records), Array.from({ length: 20 }, (_, i) => perLine * (i + 1)), flags.join(' '));
  }
});

test('durable relay: replies are the upstream\'s own bytes, each record a signed digest and never the payload', async () => {
  const canary = 'canary-7f3a9c-durable-relay';
  const lines = [1, 2, 3].map((i) => call(i, `${canary}-${i}`));
  const direct = await session([UPSTREAM], lines);
  const dir = mkdtempSync(join(tmpdir(), 'durable-relay-'));
  const db = join(dir, 'floor.db');
  assert.deepEqual(await session([RELAY, '--db', db, '--', process.execPath, UPSTREAM], lines), direct);
  const rows = new Database(db, { readonly: true }).prepare('SELECT digest, sig FROM records ORDER BY seq').all() as { digest: string; sig: string }[];
  assert.deepEqual(rows.map((r) => r.digest), lines.map((l) => createHash('sha256').update(l).digest('hex')));
  for (const r of rows) assert.equal(Buffer.from(r.sig, 'base64').length, 64); // an Ed25519 signature
  for (const f of readdirSync(dir)) assert.ok(!readFileSync(join(dir, f)).includes(canary), `${f} holds a payload`);
});

test('durable relay: without a command, or with a flag it does not take, it says how to call it and exits 2', async () => {
  for (const argv of [[RELAY], [RELAY, '--records', '0', '--', process.execPath, UPSTREAM], [RELAY, '--record', '2', '--', process.execPath, UPSTREAM]]) {
    const child = spawn(process.execPath, argv, { stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    child.stderr.on('data', (d) => (err += d));
    const code = await new Promise((res) => child.once('exit', res));
    assert.equal(code, 2, argv.join(' '));
    assert.match(err, /usage: durable-relay\.js/);
  }
});
