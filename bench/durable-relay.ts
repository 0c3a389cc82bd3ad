// The durable relay: the floor for any gate that records a call before forwarding it (issue 16's
// invariant: an entry is durable before the call it records is forwarded). It is the line relay
// plus, for every line from the host, what such a record costs at the least: one Ed25519
// signature (node:crypto, the gate's algorithm) and one SQLite commit of the line's digest and
// signature (WAL, synchronous=FULL, as the gate's store), before the line goes on. No parsing,
// no checks, no chain, nothing on the way back. Payloads are never stored: digests only.
// --no-fsync commits with synchronous=NORMAL (no fsync at COMMIT: not durable on power loss):
// beside the durable relay, it shows what the disk costs on the machine of the run.
// --records 2 signs and stores two records per line in its commit, as the gate does with one
// call in flight (the call's decision entry and the previous call's result entry, ADR 017).
// Usage: node dist/bench/durable-relay.js [--db PATH] [--no-fsync] [--records N] -- COMMAND [ARGS...]
import { spawn } from 'node:child_process';
import { parseArgs } from 'node:util';
import { createHash, generateKeyPairSync, sign } from 'node:crypto';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { copyLines } from './lines.js';
import { tempDir } from './lib.js';

const dash = process.argv.indexOf('--');
const own = dash >= 0 ? process.argv.slice(2, dash) : [];
const argv = dash >= 0 ? process.argv.slice(dash + 1) : [];
let opts: { db?: string; 'no-fsync'?: boolean; records?: string } | null;
try {
  opts = parseArgs({ args: own, options: { db: { type: 'string' }, 'no-fsync': { type: 'boolean' }, records: { type: 'string' } }, strict: true }).values;
} catch {
  opts = null; // a flag it does not take
}
const noFsync = opts?.['no-fsync'] === true;
const records = Number(opts?.records ?? 1);
if (opts === null || argv.length === 0 || !Number.isSafeInteger(records) || records < 1) {
  process.stderr.write('usage: durable-relay.js [--db PATH] [--no-fsync] [--records N] -- COMMAND [ARGS...]\n');
  process.exit(2);
}
const db = new Database(opts!.db ?? join(tempDir('cloakpipe-bench-durable-'), 'floor.db'));
db.pragma('journal_mode = WAL');
db.pragma(noFsync ? 'synchronous = NORMAL' : 'synchronous = FULL');
db.exec('CREATE TABLE IF NOT EXISTS records (seq INTEGER PRIMARY KEY, digest TEXT NOT NULL, sig TEXT NOT NULL)');
const insert = db.prepare('INSERT INTO records (digest, sig) VALUES (?, ?)');
const { privateKey } = generateKeyPairSync('ed25519');

/** `records` signed rows per line, all lines of a run in one commit, before the run is forwarded. */
const record = db.transaction((lines: Buffer) => {
  for (let start = 0, end = lines.indexOf(0x0a); end >= 0; start = end + 1, end = lines.indexOf(0x0a, start)) {
    const digest = createHash('sha256').update(lines.subarray(start, end)).digest('hex');
    for (let r = 0; r < records; r++) insert.run(digest, sign(null, Buffer.from(digest), privateKey).toString('base64'));
  }
});

const child = spawn(argv[0], argv.slice(1), { stdio: ['pipe', 'pipe', 'inherit'] });
copyLines(process.stdin, child.stdin!, (lines) => record(lines));
copyLines(child.stdout!, process.stdout);
child.stdin!.on('error', () => undefined);
process.stdin.on('end', () => child.stdin!.end());
child.on('exit', (code) => {
  db.close();
  process.exit(code ?? 1);
});
