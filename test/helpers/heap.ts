// Heap snapshots for the memory canaries: what a gate still holds once its calls are over. A
// snapshot (V8 runs a full GC first) holds every live string up to its first 1,024 characters,
// not the bytes of buffers. Also the manifest and policy those tests gate their calls with.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { getHeapSnapshot } from 'node:v8';

/** One tool whose argument carries the canary; `release` names it in the snapshot. */
export const CANARY_MANIFEST = `version: 1
release: heap-canary@1
tools:
  echo:
    effect: read
    arguments:
      message: { type: string, max_len: 200 }
`;
// The forbid reads the argument, so it crosses into Cedar and is a key of the answer cache.
export const CANARY_POLICY = `permit (principal, action, resource);
forbid (principal, action, resource) when { context.args has message && context.args.message like "*forbidden*" };
`;

/** The heap snapshot of this process, as its JSON text. */
export async function ownHeapSnapshot(): Promise<string> {
  const chunks: string[] = [];
  for await (const c of getHeapSnapshot()) chunks.push(String(c));
  return chunks.join('');
}

/** Node options that make a process write a heap snapshot into `dir` on SIGUSR2. */
export const snapshotOnSignal = (dir: string) => ['--heapsnapshot-signal=SIGUSR2', `--diagnostic-dir=${dir}`];

/** The heap snapshot of process `pid`, started with snapshotOnSignal(dir). */
export async function heapSnapshotOf(pid: number, dir: string): Promise<string> {
  process.kill(pid, 'SIGUSR2');
  // Node writes the file in one go; it is whole once its size stops changing and it parses.
  for (let last = -1, deadline = Date.now() + 60_000; Date.now() < deadline; ) {
    await new Promise((r) => setTimeout(r, 250));
    const file = readdirSync(dir).find((n) => n.endsWith('.heapsnapshot'));
    if (!file) continue;
    const size = statSync(join(dir, file)).size;
    if (size > 0 && size === last) {
      const text = readFileSync(join(dir, file), 'utf8');
      JSON.parse(text);
      return text;
    }
    last = size;
  }
  throw new Error(`no heap snapshot from process ${pid} within 60 s`);
}
