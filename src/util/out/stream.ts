// --out /dev/stdout or /dev/stderr: written through the process's own stream, wherever the
// caller pointed it (a log opened with >>, a pipe, a socket); nothing to replace or take back.
import { once } from 'node:events';
import { failureOf, watchFailures } from './stream-failure.js';
import type { OutFile } from './index.js';

/** --out /dev/stdout (or /dev/stderr) failed under the command: its reader left, or its file filled. */
export class OutputClosed extends Error {
  constructor(
    readonly path: string,
    cause: Error | undefined,
  ) {
    super(`--out ${path}: ${cause?.message ?? 'closed'}`, { cause });
  }
}

export function streamOut(stream: NodeJS.WriteStream, path: string): OutFile {
  watchFailures(stream);
  return {
    write(data) {
      const failed = failureOf(stream);
      if (failed) throw new OutputClosed(path, failed); // its reader left: no use going on
      stream.write(data);
    },
    commit: () => undefined,
    abort: () => undefined,
    // A reader that pauses (a pipe, a socket) holds the rest here: without waiting for room, a
    // long export was buffered whole in this process's memory.
    room: () => drainedTo(stream, path, stream.writableHighWaterMark),
    async delivered() {
      await new Promise((res) => setImmediate(res)); // the callbacks of the writes done
      await drainedTo(stream, path, 1);
    },
  };
}

/** Waits until fewer than `below` bytes wait in `stream`; OutputClosed if it failed or closed first. */
async function drainedTo(stream: NodeJS.WriteStream, path: string, below: number): Promise<void> {
  while (!failureOf(stream) && !stream.destroyed && stream.writableLength >= below)
    await Promise.race([once(stream, 'drain'), once(stream, 'close')]).catch(() => undefined); // 'error' rejects
  const failed = failureOf(stream);
  if (failed || stream.destroyed) throw new OutputClosed(path, failed ?? undefined);
}
