// Offload prototype (ADR 031): what moving Ed25519 signing of ledger entries off the main thread
// would save the main thread, and what it would add to a call's latency. Not the gate's code:
// entries shaped like the gate's decision entries are signed (a) inline, as the gate does, and
// (b) by one worker thread that receives a batch of canonical bodies and returns signatures
// (a group commit of 64 calls), (c) the same one body at a time (1 call in flight).
// Main-thread CPU comes from /proc/self/task/<pid>/stat (the main thread alone; Linux only).
// Usage: node dist/bench/offload.js [--n 20000] [--json]
import { readFileSync } from 'node:fs';
import { generateKeyPairSync, sign } from 'node:crypto';
import { Worker } from 'node:worker_threads';
import { canonicalize } from '../src/core/canonical.js';
import { flags, isMain, machine, section, table } from './lib.js';

const WORKER = `
const { parentPort, workerData } = require('node:worker_threads');
const { createPrivateKey, sign } = require('node:crypto');
const key = createPrivateKey(workerData.pem);
parentPort.on('message', (bodies) => parentPort.postMessage(bodies.map((b) => sign(null, Buffer.from(b), key).toString('base64'))));
`;

/** CPU seconds of this process's main thread (utime + stime, clock ticks of 10 ms). */
function mainThreadCpu(): number {
  const f = readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8');
  const rest = f.slice(f.lastIndexOf(')') + 2).split(' ');
  return (Number(rest[11]) + Number(rest[12])) / 100;
}

function body(i: number): string {
  return canonicalize({
    v: 1, seq: i, ts: new Date().toISOString(), prev: 'sha256:' + i.toString(16).padStart(64, '0'), kind: 'decision', outcome: 'allow', tool: 'echo',
    fingerprint: 'sha256:' + '1'.repeat(64), args_digest: 'sha256:' + '2'.repeat(64), context_digest: 'sha256:' + '3'.repeat(64), task: 'bench-task-1',
    session_label: 'public', agent: 'agent', manifest_digest: 'sha256:' + '4'.repeat(64), policy_digest: 'sha256:' + '5'.repeat(64), policy_ids: ['echo-allowed'],
  });
}

export async function measureOffload(n: number): Promise<(string | number)[][]> {
  const { privateKey } = generateKeyPairSync('ed25519');
  const bodies = Array.from({ length: 1024 }, (_, i) => body(i));
  const rows: (string | number)[][] = [];
  const run = async (name: string, fn: () => Promise<void> | void) => {
    await fn(); // warm
    const c = mainThreadCpu();
    const t = performance.now();
    await fn();
    const wall = performance.now() - t;
    rows.push([name, ((mainThreadCpu() - c) * 1e6 / n).toFixed(1), ((wall * 1000) / n).toFixed(1)]);
  };
  await run('inline: Ed25519 sign of the canonical body, main thread', () => {
    for (let i = 0; i < n; i++) sign(null, Buffer.from(bodies[i % 1024]), privateKey);
  });
  const w = new Worker(WORKER, { eval: true, workerData: { pem: privateKey.export({ type: 'pkcs8', format: 'pem' }) } });
  const ask = (batch: string[]) => new Promise<string[]>((resolve) => (w.once('message', resolve), w.postMessage(batch)));
  await run('worker, batches of 64 (a group commit at 64 in flight)', async () => {
    for (let i = 0; i < n; i += 64) await ask(bodies.slice(i % 1024, (i % 1024) + 64));
  });
  await run('worker, one at a time (1 in flight): round trip per entry', async () => {
    for (let i = 0; i < n; i++) await ask([bodies[i % 1024]]);
  });
  await w.terminate();
  return rows;
}

export async function main() {
  const f = flags({}, { n: 20000 });
  const rows = await measureOffload(f.n);
  if (f.json) return void process.stdout.write(JSON.stringify({ machine: machine(), rows }) + '\n');
  section(
    'Offload prototype: Ed25519 signing of entries on a worker thread (ADR 031)',
    `${machine()}\n\n${table(['where the signature is made', 'main-thread CPU µs per entry', 'wall µs per entry'], rows)}\n\nThe main thread's saving is the first row minus the second; the third is what one call in flight would wait for instead of signing itself.`,
  );
}

if (isMain(import.meta.url)) await main();
