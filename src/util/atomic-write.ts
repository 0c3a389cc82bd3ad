// Replace a file so that a crash at any instant leaves the old bytes or the new, never a mix:
// write a temporary file beside it, fsync it, rename it over the target, fsync the folder. Where
// a command's --out goes is src/util/out/.
import { closeSync, fsyncSync, openSync, renameSync, rmSync, statSync, writeSync, chmodSync, realpathSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { createHash, randomBytes } from 'node:crypto';

/** The file a path names, through symbolic links (replacing the link itself would cut it off). */
export function realTarget(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
}

/** Makes a folder's entries durable (a file created or renamed in it). */
export function syncFolder(dir: string): void {
  const dfd = openSync(dir, 'r');
  try {
    fsyncSync(dfd);
  } finally {
    closeSync(dfd);
  }
}

/** A file name is at most 255 bytes; `.`, `.<12 hex>.tmp` take 18 of them. */
const MAX_STEM_BYTES = 255 - 18;

/**
 * The part of a temporary name that names its target: the target's own name, or for a name too
 * long to leave room (ENAMETOOLONG: a config named 240 characters was never replaced) its first
 * bytes and a digest of the whole.
 */
export function tempStem(name: string): string {
  if (Buffer.byteLength(name) <= MAX_STEM_BYTES) return name;
  const digest = createHash('sha256').update(name).digest('hex').slice(0, 16);
  let head = name.slice(0, MAX_STEM_BYTES - digest.length - 1);
  while (Buffer.byteLength(head) > MAX_STEM_BYTES - digest.length - 1) head = head.slice(0, -1);
  if (/[\ud800-\udbff]$/.test(head)) head = head.slice(0, -1); // never half a character
  return `${head}-${digest}`;
}

/** The temporary file a replace of `target` writes: `.NAME.<12 hex>.tmp` beside it (NAME: tempStem). */
export function tempBeside(target: string): string {
  return join(dirname(target), `.${tempStem(basename(target))}.${randomBytes(6).toString('hex')}.tmp`);
}

/** Bytes on their way to a file: kept only by `commit`; `abort` leaves the target as it was. */
export interface Output {
  write(data: string | Uint8Array): void;
  commit(): void;
  /** Safe to call after a failed commit, and more than once. */
  abort(): void;
}

export function writeAll(fd: number, data: string | Uint8Array): void {
  const buf = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
  for (let off = 0; off < buf.length; ) off += writeSync(fd, buf, off, buf.length - off);
}

/**
 * `mode`: the file's mode, whatever the umask; or `{ created }`, the mode a new file is created
 * with under the umask, as any program's output file (an existing file keeps its own); or none:
 * an existing file keeps its mode, a new one is 0600.
 */
export function replacing(path: string, mode?: number | { created: number }): Output {
  const target = realTarget(path);
  let keepMode = typeof mode === 'number' ? mode : undefined;
  if (keepMode === undefined) {
    try {
      keepMode = statSync(target).mode & 0o7777;
    } catch {
      keepMode = typeof mode === 'object' ? undefined : 0o600;
    }
  }
  const dir = dirname(target);
  const tmp = tempBeside(target);
  const fd = openSync(tmp, 'wx', keepMode ?? (mode as { created: number }).created);
  let open = true;
  const close = () => {
    if (open) closeSync(fd);
    open = false;
  };
  return {
    write: (data) => writeAll(fd, data),
    commit() {
      if (keepMode !== undefined) chmodSync(tmp, keepMode); // the umask narrowed openSync's mode
      fsyncSync(fd);
      close();
      renameSync(tmp, target);
      syncFolder(dir);
    },
    abort() {
      close();
      rmSync(tmp, { force: true });
    },
  };
}

/** Writes `data` through `o`: committed whole, or aborted and the error thrown. */
export function whole(o: Output, data: string | Uint8Array): void {
  try {
    o.write(data);
    o.commit();
  } catch (e) {
    o.abort();
    throw e;
  }
}

export function atomicWrite(path: string, data: string | Uint8Array, mode?: number | { created: number }): void {
  whole(replacing(path, mode), data);
}
