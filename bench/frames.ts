// Frames: what each durable commit writes, page by page. N sequential calls through the gate and
// through the durable relay (the floor: one signed row per call), then each path's write-ahead
// log is read while the path still runs: the frames of the newest commits, each named by the
// table or index whose page it holds (SQLite's dbstat). Every frame is a 4 KiB page that the
// commit writes (two pwrites: its header and the page) and its fsync flushes; on a VM where a
// system call costs microseconds, that is where the gate's commit differs from the floor's.
// Usage: node dist/bench/frames.js [--n 600] [--commits 300]
import Database from 'better-sqlite3';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DURABLE_RELAY, flags, gateArgv, gateFiles, isMain, LineClient, machine, section, table, tempDir, upstreamArgv } from './lib.js';

export interface WalCommits {
  /** The page numbers each commit wrote, oldest first, for the commits since the log restarted. */
  commits: number[][];
}

/**
 * The commits in a WAL file: frames whose salts are the header's (a frame with other salts is
 * left from before the last restart), cut at each commit frame (a non-zero database size).
 */
export function readWal(path: string): WalCommits {
  const wal = readFileSync(path);
  if (wal.length < 32) return { commits: [] };
  const pageSize = wal.readUInt32BE(8);
  const salt1 = wal.readUInt32BE(16);
  const salt2 = wal.readUInt32BE(20);
  const commits: number[][] = [];
  let open: number[] = [];
  for (let off = 32; off + 24 + pageSize <= wal.length; off += 24 + pageSize) {
    if (wal.readUInt32BE(off + 8) !== salt1 || wal.readUInt32BE(off + 12) !== salt2) break;
    open.push(wal.readUInt32BE(off));
    if (wal.readUInt32BE(off + 4) !== 0) {
      commits.push(open);
      open = [];
    }
  }
  return { commits };
}

/** Each page's owner (table or index) as the database file has it now; page 1 is the header. */
function pageOwners(dbPath: string): Map<number, string> {
  const db = new Database(dbPath, { readonly: true, fileMustExist: true });
  try {
    const owners = new Map<number, string>();
    for (const r of db.prepare('SELECT name, pageno FROM dbstat').all() as { name: string; pageno: number }[]) owners.set(r.pageno, r.name);
    owners.set(1, 'page 1 (the header: page count, freelist)');
    return owners;
  } finally {
    db.close();
  }
}

export interface FrameCount {
  path: string;
  file: string;
  commits: number;
  framesPerCommit: number;
  /** Frames per commit, by the table or index whose page it is. */
  byOwner: [string, number][];
}

function countFrames(path: string, dbPath: string, newest: number): FrameCount | null {
  if (!existsSync(dbPath + '-wal')) return null;
  const { commits } = readWal(dbPath + '-wal');
  const last = commits.slice(-newest);
  if (last.length === 0) return null;
  const owners = pageOwners(dbPath);
  const by = new Map<string, number>();
  for (const c of last)
    for (const p of c) {
      const owner = owners.get(p) ?? 'a page freed since';
      by.set(owner, (by.get(owner) ?? 0) + 1);
    }
  const frames = last.reduce((s, c) => s + c.length, 0);
  return { path, file: dbPath.split('/').pop()!, commits: last.length, framesPerCommit: frames / last.length, byOwner: [...by].map(([k, v]) => [k, v / last.length] as [string, number]).sort((a, b) => b[1] - a[1]) };
}

/** N sequential calls on a path, then its WALs read while it runs. */
async function framesOf(name: string, argv: string[], dbs: string[], n: number, newest: number): Promise<FrameCount[]> {
  const client = await LineClient.start({ name, argv });
  try {
    await client.sequential(n);
    await new Promise((r) => setTimeout(r, 100)); // the gate's last result entry commits within 2 ms
    return dbs.map((db) => countFrames(name, db, newest)).filter((c): c is FrameCount => c !== null);
  } finally {
    await client.close();
  }
}

export async function main() {
  const f = flags({ commits: { type: 'string' } }, { n: 600, warmup: 0 });
  const newest = Number(f.values.commits ?? 300);
  const relayDb = join(tempDir('cloakpipe-bench-frames-'), 'floor.db');
  const g = gateFiles();
  const counts = [
    ...(await framesOf('durable relay', [process.execPath, DURABLE_RELAY, '--db', relayDb, '--', ...upstreamArgv()], [relayDb], f.n, newest)),
    ...(await framesOf('gate', [process.execPath, ...gateArgv(g, upstreamArgv())], [join(g.home, 'ledger.db'), join(g.home, 'operations.db')], f.n, newest)),
  ];
  if (f.json) return void process.stdout.write(JSON.stringify({ machine: machine(), counts }) + '\n');
  const rows = counts.flatMap((c) => [
    [c.path, c.file, 'all', String(c.commits), c.framesPerCommit.toFixed(2)],
    ...c.byOwner.map(([owner, k]) => ['', '', owner, '', k.toFixed(2)]),
  ]);
  section(
    `Frames: what each commit writes, ${f.n} sequential calls per path (the newest ${newest} commits)`,
    `${machine()}\n\n${table(['path', 'file', 'pages of', 'commits', 'frames per commit'], rows)}\n\nA frame is one 4 KiB page in the write-ahead log: two pwrites when the commit writes it, and bytes its fsync flushes. One call in flight: the gate commits once per call (the call's decision with the previous call's result and settlement, ADR 017); the durable relay commits one row per call.`,
  );
}

if (isMain(import.meta.url)) await main();
