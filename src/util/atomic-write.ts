// Replace a file so that a crash at any instant leaves the old bytes or the new, never a mix:
// write a temporary file beside it, fsync it, rename it over the target, fsync the folder.
import { closeSync, fsyncSync, openSync, renameSync, rmSync, statSync, writeSync, chmodSync, realpathSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { randomBytes } from 'node:crypto';

/** The file a path names, through symbolic links (replacing the link itself would cut it off). */
export function realTarget(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
}

export function atomicWrite(path: string, data: string | Uint8Array, mode?: number): void {
  const target = realTarget(path);
  let keepMode = mode;
  if (keepMode === undefined) {
    try {
      keepMode = statSync(target).mode & 0o7777;
    } catch {
      keepMode = 0o600;
    }
  }
  const dir = dirname(target);
  const tmp = join(dir, `.${basename(target)}.${randomBytes(6).toString('hex')}.tmp`);
  const fd = openSync(tmp, 'wx', keepMode);
  try {
    const buf = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
    for (let off = 0; off < buf.length; ) off += writeSync(fd, buf, off, buf.length - off);
    chmodSync(tmp, keepMode); // the umask narrowed openSync's mode
    fsyncSync(fd);
  } catch (e) {
    closeSync(fd);
    rmSync(tmp, { force: true });
    throw e;
  }
  closeSync(fd);
  try {
    renameSync(tmp, target);
  } catch (e) {
    rmSync(tmp, { force: true });
    throw e;
  }
  const dfd = openSync(dir, 'r');
  try {
    fsyncSync(dfd);
  } finally {
    closeSync(dfd);
  }
}
