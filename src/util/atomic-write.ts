// Replace a file so that a crash at any instant leaves the old bytes or the new, never a mix:
// write a temporary file beside it, fsync it, rename it over the target, fsync the folder. And
// where a command's --out goes (openOutput): such a file, or a stream it must not replace.
import { closeSync, fsyncSync, openSync, renameSync, rmSync, statSync, writeSync, chmodSync, readlinkSync, realpathSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';

/** The file a path names, through symbolic links (replacing the link itself would cut it off). */
export function realTarget(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
}

/** Bytes on their way to a file: kept only by `commit`; `abort` leaves the target as it was. */
export interface Output {
  write(data: string | Uint8Array): void;
  commit(): void;
  /** Safe to call after a failed commit, and more than once. */
  abort(): void;
}

function writeAll(fd: number, data: string | Uint8Array): void {
  const buf = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
  for (let off = 0; off < buf.length; ) off += writeSync(fd, buf, off, buf.length - off);
}

/**
 * `mode`: the file's mode, whatever the umask; or `{ created }`, the mode a new file is created
 * with under the umask, as any program's output file (an existing file keeps its own); or none:
 * an existing file keeps its mode, a new one is 0600.
 */
function replacing(path: string, mode?: number | { created: number }): Output {
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
      const dfd = openSync(dir, 'r');
      try {
        fsyncSync(dfd);
      } finally {
        closeSync(dfd);
      }
    },
    abort() {
      close();
      rmSync(tmp, { force: true });
    },
  };
}

/** Writes `data` through `o`: committed whole, or aborted and the error thrown. */
function whole(o: Output, data: string | Uint8Array): void {
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

/** The descriptor a path names as written, if it is this process's: /dev/stdout, /dev/fd/N, /proc/self/fd/N, /proc/PID/fd/N. */
function descriptorNamed(p: string): number | null {
  const std = /^\/dev\/std(in|out|err)$/.exec(p);
  if (std) return ['in', 'out', 'err'].indexOf(std[1]!);
  const fd = /^\/(?:dev|proc\/(self|thread-self|\d+(?:\/task\/\d+)?))\/fd\/(\d{1,9})$/.exec(p);
  if (!fd || (fd[1] !== undefined && /^\d/.test(fd[1]) && parseInt(fd[1], 10) !== process.pid)) return null; // another process's
  return Number(fd[2]);
}

/**
 * The descriptor of this process a path names, else null: as written (/dev//fd/7 and
 * /tmp/../dev/fd/12 too), or reached through symbolic links, the path's own or its folders' (a
 * link to /dev/fd/11; a folder linked to /dev/fd). Each link is read, never opened: opening
 * /proc/self/fd/N reopens what N holds, which may be a pipe of Node's own.
 */
export function ownDescriptor(path: string): number | null {
  let p = resolve(path);
  for (let hop = 0; hop < 40; hop++) {
    const named = descriptorNamed(p);
    if (named !== null) return named;
    let here: string;
    try {
      here = join(realpathSync(dirname(p)), basename(p));
    } catch {
      return null; // no such folder: no descriptor either
    }
    const reached = descriptorNamed(here);
    if (reached !== null) return reached;
    let link: string;
    try {
      link = readlinkSync(here);
    } catch {
      return null; // a file, a folder, or nothing: not a link
    }
    p = resolve(dirname(here), link);
  }
  return null; // a loop: opening it fails (ELOOP)
}

/** Whether an --out path is this process's standard output: a command's own lines then go to stderr. */
export function namesStdout(path: string): boolean {
  return ownDescriptor(path) === 1;
}

/** --out /dev/stdout (or /dev/stderr) failed under the command: its reader left, or its file filled. */
export class OutputClosed extends Error {
  constructor(
    readonly path: string,
    cause: Error | undefined,
  ) {
    super(`--out ${path}: ${cause?.message ?? 'closed'}`, { cause });
  }
}

// Node tells a failed write to stdout or stderr later, by an 'error' event, not from write().
const failures = new Map<NodeJS.WriteStream, Error | null>();

function watch(stream: NodeJS.WriteStream): void {
  if (failures.has(stream)) return;
  failures.set(stream, null);
  stream.on('error', (e: Error) => void failures.set(stream, failures.get(stream) ?? e));
}

/** Resolves when what `openOutput(path)` wrote has left this process; throws OutputClosed if it could not. */
export async function delivered(path: string): Promise<void> {
  const fd = ownDescriptor(path);
  if (fd !== 1 && fd !== 2) return;
  const stream = fd === 1 ? process.stdout : process.stderr;
  await new Promise((res) => setImmediate(res)); // the callbacks of the writes done
  while (!failures.get(stream) && !stream.destroyed && stream.writableLength > 0)
    await Promise.race([once(stream, 'drain'), once(stream, 'close')]).catch(() => undefined); // 'error' rejects
  const failed = failures.get(stream);
  if (failed || stream.destroyed) throw new OutputClosed(path, failed ?? undefined);
}

/** Straight to a file that is not replaced: nothing to take back. */
function direct(fd: number): Output {
  let open = true;
  const close = () => {
    if (open) closeSync(fd);
    open = false;
  };
  return { write: (data) => writeAll(fd, data), commit: close, abort: close };
}

/**
 * A file a user asked a command for (--out: a proof, a checkpoint, an export, a draft): replaced
 * whole or not at all, so a full disk never leaves part of one (a policy cut short could still
 * load); a symbolic link is followed, not replaced. A new file is 0644 under the umask, as any
 * program's output. A target that is not a regular file (a FIFO, a terminal) is written as it
 * is: there is nothing to replace there. /dev/stdout and /dev/stderr (and /dev/fd/1, /dev/fd/2)
 * are written through the process's own streams, wherever the caller pointed them: a log opened
 * with >> is appended to, not replaced (which would drop what it held), and a pipe or a socket
 * works (reopening a socket by its path does not). Any other descriptor is refused, nothing
 * written: cloakpipe cannot tell one its caller gave from its own (Node's internal pipes: a
 * write into one crashed it, SIGSEGV).
 */
export function openOutput(path: string): Output {
  const fd = ownDescriptor(path);
  if (fd === 1 || fd === 2) {
    const stream = fd === 1 ? process.stdout : process.stderr;
    watch(stream);
    const write = (data: string | Uint8Array) => {
      const failed = failures.get(stream);
      if (failed) throw new OutputClosed(path, failed); // its reader left: no use going on
      stream.write(data);
    };
    return { write, commit: () => undefined, abort: () => undefined };
  }
  if (fd === 0) throw new Error(`--out ${path}: standard input is not an output; give a file's path, or /dev/stdout`);
  if (fd !== null) throw new Error(`--out ${path}: descriptor ${fd} may be one cloakpipe holds itself; give a file's path, or /dev/stdout`);
  let regular = true;
  try {
    regular = statSync(path).isFile();
  } catch {
    // absent: created
  }
  return regular ? removedOnSignal(() => replacing(path, { created: 0o644 })) : direct(openSync(path, 'w'));
}

// A command ended by a signal (Ctrl-C, SIGTERM, a closed terminal) while an --out file is being
// written: its temporary file is removed, the target left as it was, and the command ends as
// the signal ends a program. A long export stopped with Ctrl-C left a hidden .NAME.HEX.tmp as
// large as the export beside its target. Only where nothing else listens for the signal: a
// server's own shutdown is not cut short.
const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
const unfinished = new Set<Output>();
let armed: NodeJS.Signals[] = [];

function endBySignal(signal: NodeJS.Signals): void {
  for (const o of unfinished) o.abort();
  unfinished.clear();
  disarm();
  process.kill(process.pid, signal); // no listener left: the default action
}

function disarm(): void {
  for (const s of armed) process.removeListener(s, endBySignal);
  armed = [];
}

/** Disarmed not at once: a signal that came during the last stretch is handled first (else it is lost). */
function disarmSoon(): void {
  if (unfinished.size === 0) setImmediate(() => unfinished.size === 0 && disarm());
}

function removedOnSignal(open: () => Output): Output {
  // Armed before the temporary file exists: a signal that comes while it is created waits for
  // the handler, which then finds it.
  if (armed.length === 0) {
    armed = SIGNALS.filter((s) => process.listenerCount(s) === 0);
    for (const s of armed) process.on(s, endBySignal);
  }
  let o: Output;
  try {
    o = open();
  } catch (e) {
    disarmSoon();
    throw e;
  }
  unfinished.add(o);
  const settled = () => {
    unfinished.delete(o);
    disarmSoon();
  };
  return {
    write: (data) => o.write(data),
    commit() {
      o.commit();
      settled();
    },
    abort() {
      o.abort();
      settled();
    },
  };
}

export async function writeOutput(path: string, data: string): Promise<void> {
  whole(openOutput(path), data);
  await delivered(path);
}
