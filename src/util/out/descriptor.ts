// Which of this process's descriptors an --out path names, if any: /dev/stdout, /dev/fd/N,
// /proc/self/fd/N, as written or through symbolic links.
import { readlinkSync, realpathSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';

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

/** Where a command's own lines go, given its --out: stderr when --out is its standard output. */
export function sayTo(out: string | undefined): NodeJS.WriteStream {
  return out !== undefined && ownDescriptor(out) === 1 ? process.stderr : process.stdout;
}
