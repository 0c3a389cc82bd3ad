// Read a file the operator names (the manifest, the policy, the task context) that may be
// replaced while the gate runs. Read by name, a FIFO put in its place made the read wait for a
// writer on the gate's main thread, and a link to a device (/dev/zero) read without end: every
// call stopped. Opened without waiting (O_NONBLOCK), it must be a regular file on the open
// descriptor. Links are followed: operators deploy these files as links (a config map's ..data).
import { closeSync, constants, fstatSync, openSync, readFileSync } from 'node:fs';

export function readRegularFile(path: string): Buffer {
  const fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    if (!fstatSync(fd).isFile()) throw Object.assign(new Error(`${path} is not a regular file`), { code: 'not a regular file' });
    return readFileSync(fd);
  } finally {
    closeSync(fd);
  }
}
