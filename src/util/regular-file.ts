// Read a file that may be replaced while the gate runs. Read by name, a FIFO put in its place
// made the read wait for a writer on the gate's main thread, and a link to a device (/dev/zero)
// read without end: every call stopped. Opened without waiting (O_NONBLOCK), it must be a
// regular file on the open descriptor, whatever a stat by name said before.
import { closeSync, constants, fstatSync, openSync, readFileSync, readSync, type BigIntStats } from 'node:fs';

function withRegularFile<T>(path: string, flags: number, use: (fd: number, st: BigIntStats) => T): T {
  const fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK | flags);
  try {
    const st = fstatSync(fd, { bigint: true });
    if (!st.isFile()) throw Object.assign(new Error(`${path} is not a regular file`), { code: 'not a regular file' });
    return use(fd, st);
  } finally {
    closeSync(fd);
  }
}

/**
 * A file the operator names (the manifest, the policy, the task context). Links are followed:
 * operators deploy these files as links (a config map's ..data).
 */
export function readRegularFile(path: string): Buffer {
  return withRegularFile(path, 0, (fd) => readFileSync(fd));
}

/**
 * At most `maxBytes` of a regular file, so one that grows after its size was read is cut, not
 * read whole; null when it is larger. `followLinks: false` for a file whoever may write its
 * folder can put there (the approvals folder).
 */
export function readBoundedFile(path: string, maxBytes: number, o: { followLinks: boolean }): { bytes: Buffer; stat: BigIntStats } | null {
  return withRegularFile(path, o.followLinks ? 0 : constants.O_NOFOLLOW, (fd, stat) => {
    if (stat.size > BigInt(maxBytes)) return null;
    const buf = Buffer.alloc(maxBytes + 1);
    let n = 0;
    while (n < buf.length) {
      const got = readSync(fd, buf, n, buf.length - n, n);
      if (got === 0) break;
      n += got;
    }
    return n > maxBytes ? null : { bytes: buf.subarray(0, n), stat };
  });
}
