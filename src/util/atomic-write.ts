// Replace a file so that a crash at any instant leaves the old bytes or the new, never a mix:
// write a temporary file beside it, fsync it, rename it over the target, fsync the folder.
import { closeSync, fstatSync, fsyncSync, openSync, renameSync, rmSync, statSync, writeFileSync, writeSync, chmodSync, realpathSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { randomBytes } from 'node:crypto';

/** The file a path names, through symbolic links (replacing the link itself would cut it off). */
export function realTarget(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
}

/**
 * `mode`: the file's mode, whatever the umask; or `{ created }`, the mode a new file is created
 * with under the umask, as any program's output file (an existing file keeps its own); or none:
 * an existing file keeps its mode, a new one is 0600.
 */
export function atomicWrite(path: string, data: string | Uint8Array, mode?: number | { created: number }): void {
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
  const tmp = join(dir, `.${basename(target)}.${randomBytes(6).toString('hex')}.tmp`);
  const fd = openSync(tmp, 'wx', keepMode ?? (mode as { created: number }).created);
  try {
    const buf = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
    for (let off = 0; off < buf.length; ) off += writeSync(fd, buf, off, buf.length - off);
    if (keepMode !== undefined) chmodSync(tmp, keepMode); // the umask narrowed openSync's mode
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

/** The descriptor of this process a path names (/dev/stdout, /dev/fd/N, /proc/self/fd/N, …), else null. */
function ownDescriptor(path: string): number | null {
  const p = resolve(path);
  const std = /^\/dev\/std(in|out|err)$/.exec(p);
  if (std) return ['in', 'out', 'err'].indexOf(std[1]!);
  const fd = /^\/(?:dev|proc\/self)\/fd\/(\d{1,9})$/.exec(p);
  return fd ? Number(fd[1]) : null;
}

/**
 * A file a user asked a command for (--out: a proof, a checkpoint, a draft): replaced whole or
 * not at all, so a full disk never leaves part of one (a policy cut short could still load).
 * A new file is 0644 under the umask, as any program's output. A target that is not a regular
 * file (a pipe, a terminal) is written as it is: there is nothing to replace there. Nor is a file
 * on standard output or error (`--out /dev/stdout >> log`): it is written through that
 * descriptor, where the shell opened it (appended, with >>); replacing the file would drop what
 * it held before. A descriptor past 2 is refused, nothing written: cloakpipe cannot tell one its
 * caller gave from its own (Node's internal pipes: a write into one crashed it, SIGSEGV).
 */
export function writeOutput(path: string, data: string): void {
  const fd = ownDescriptor(path);
  if (fd !== null && fd > 2) throw new Error(`--out ${path}: descriptor ${fd} may be one cloakpipe holds itself; give a file's path, or /dev/stdout`);
  let regular = true;
  try {
    regular = (fd === null ? statSync(path) : fstatSync(fd)).isFile();
  } catch {
    // absent: created
  }
  if (!regular) writeFileSync(path, data);
  else if (fd === null) atomicWrite(path, data, { created: 0o644 });
  else {
    const buf = Buffer.from(data, 'utf8');
    for (let off = 0; off < buf.length; ) off += writeSync(fd, buf, off, buf.length - off);
  }
}
