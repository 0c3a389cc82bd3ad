// Where a command's --out goes (ledger checkpoint, prove, export; manifest draft): a file replaced
// whole or not at all, a stream it must not replace, or a descriptor it refuses.
import { closeSync, openSync, statSync } from 'node:fs';
import { replacing, whole, writeAll, type Output } from '../atomic-write.js';
import { ownDescriptor } from './descriptor.js';
import { removedOnSignal } from './on-signal.js';
import { streamOut } from './stream.js';

export { ownDescriptor, sayTo } from './descriptor.js';
export { OutputClosed } from './stream.js';

export interface OutFile extends Output {
  /** Resolves once what was written has left this process (a stream's writes fail later); OutputClosed if it could not. */
  delivered(): Promise<void>;
  /** Resolves once the output can take more (a stream's buffer below its mark); a file takes all at once. */
  room(): Promise<void>;
}

const nothingPending = async () => undefined;

/** Straight to a file that is not replaced: nothing to take back. */
function direct(fd: number): OutFile {
  let open = true;
  const close = () => {
    if (open) closeSync(fd);
    open = false;
  };
  return { write: (data) => writeAll(fd, data), commit: close, abort: close, delivered: nothingPending, room: nothingPending };
}

/**
 * A file a user asked a command for (--out: a proof, a checkpoint, an export, a draft): replaced
 * whole or not at all, so a full disk never leaves part of one (a policy cut short could still
 * load); a symbolic link is followed, not replaced. A new file is `created` (0644) under the
 * umask, as any program's output; an existing one keeps its mode. A target that is not a regular file (a FIFO, a terminal) is written as it
 * is: there is nothing to replace there. /dev/stdout and /dev/stderr (and /dev/fd/1, /dev/fd/2)
 * are written through the process's own streams, wherever the caller pointed them: a log opened
 * with >> is appended to, not replaced (which would drop what it held), and a pipe or a socket
 * works (reopening a socket by its path does not). Any other descriptor is refused, nothing
 * written: cloakpipe cannot tell one its caller gave from its own (Node's internal pipes: a
 * write into one crashed it, SIGSEGV).
 */
export function openOutput(path: string, created = 0o644): OutFile {
  const fd = ownDescriptor(path);
  if (fd === 1) return streamOut(process.stdout, path);
  if (fd === 2) return streamOut(process.stderr, path);
  if (fd === 0) throw new Error(`--out ${path}: standard input is not an output; give a file's path, or /dev/stdout`);
  if (fd !== null) throw new Error(`--out ${path}: descriptor ${fd} may be one cloakpipe holds itself; give a file's path, or /dev/stdout`);
  let regular = true;
  try {
    regular = statSync(path).isFile();
  } catch {
    // absent: created
  }
  if (!regular) return direct(openSync(path, 'w'));
  return { ...removedOnSignal(() => replacing(path, { created })), delivered: nothingPending, room: nothingPending };
}

/** `data` to `path` as openOutput writes it, whole; resolves once it has left this process. */
export async function writeOutput(path: string, data: string, created?: number): Promise<void> {
  const o = openOutput(path, created);
  whole(o, data);
  await o.delivered();
}
