// What a test reads of a running gate from /proc: its resident memory and the bytes it has read,
// the figures memory-bound tests compare before and after a flood.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import type { RawGate } from './raw-gate.js';
import { answerTo } from './raw-session.js';

/** Whether a process with this pid exists (signal 0 reaches it). */
export const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** The process's resident memory, in bytes. */
export const rss = (pid: number) => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) * 1024;

/** Bytes the process has read (any file descriptor). */
export const readBytes = (pid: number) => Number(/rchar: (\d+)/.exec(readFileSync(`/proc/${pid}/io`, 'utf8'))![1]);

/** Waits until `pid` has read nothing for 2 s (it stopped reading) or has read `upTo` bytes since `from`; fails after two minutes. */
export async function untilReadingStops(pid: number, from: number, upTo: number): Promise<void> {
  let last = readBytes(pid);
  for (let still = 0, waited = 0; still < 20 && last - from < upTo; waited++) {
    assert.ok(waited < 1200, 'the gate goes on reading for two minutes');
    await new Promise((r) => setTimeout(r, 100));
    const read = readBytes(pid);
    still = read === last ? still + 1 : 0;
    last = read;
  }
}

const MIB = 1024 * 1024;

/**
 * The host stops reading and calls the server's `flood` tool for `count` notifications of about
 * 1 MiB: the bytes the gate grew by once it stopped reading (or read the whole flood).
 */
export async function growthWhileUnread(gate: RawGate, count: number): Promise<number> {
  const pid = gate.child.pid!;
  const before = rss(pid);
  const readBefore = readBytes(pid);
  gate.child.stdout!.pause(); // the host stops reading
  gate.send(JSON.stringify({ jsonrpc: '2.0', id: 'flood', method: 'tools/call', params: { name: 'flood', arguments: { count, bytes: MIB - 200 } } }) + '\n');
  await untilReadingStops(pid, readBefore, count * MIB);
  return rss(pid) - before;
}

/**
 * The host reads again after a flood of `count` notifications answering call `id`: every one
 * arrives, in order, then the call's answer; a ping the flooding server answers with how many it
 * sent shows none was sent twice.
 */
export async function readFloodInOrder(gate: RawGate, id: string, count: number): Promise<void> {
  gate.child.stdout!.resume();
  const seen: number[] = [];
  for (;;) {
    const m = await gate.next(120_000);
    if (m.method === 'notifications/message') seen.push(m.params.data.n);
    else if (m.id === id) break;
  }
  assert.deepEqual(seen, [...Array(count).keys()], 'nothing lost, nothing reordered');
  gate.send(JSON.stringify({ jsonrpc: '2.0', id: 'count', method: 'ping' }) + '\n');
  assert.equal((await answerTo(gate, 'count')).result._meta.sent, count);
}
