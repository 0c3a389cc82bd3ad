// Copying whole newline-delimited lines from one stream to another, as the baseline relays do:
// a partial line waits for its newline; the lines of one chunk go on as one write.
import type { Readable, Writable } from 'node:stream';

/** Copy complete lines from `from` to `to`; `before` sees each run of lines before it is written. */
export function copyLines(from: Readable, to: Writable, before?: (lines: Buffer) => void): void {
  let pending: Buffer[] = [];
  from.on('data', (chunk: Buffer) => {
    const last = chunk.lastIndexOf(0x0a);
    if (last < 0) return void pending.push(chunk);
    const head = chunk.subarray(0, last + 1);
    const lines = pending.length ? Buffer.concat([...pending, head]) : head;
    pending = last + 1 < chunk.length ? [chunk.subarray(last + 1)] : [];
    before?.(lines);
    to.write(lines);
  });
}
