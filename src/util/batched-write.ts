// Writes made in one turn of the event loop leave together: a group commit releases many calls
// at once, and each would otherwise cost its own write(2) (and wake the reader each time).
import type { Writable } from 'node:stream';

export function writeBatched(stream: Writable, text: string): void {
  if (!corked.has(stream)) {
    corked.add(stream);
    stream.cork();
    process.nextTick(() => {
      corked.delete(stream);
      stream.uncork();
    });
  }
  stream.write(text);
}

const corked = new WeakSet<Writable>();
