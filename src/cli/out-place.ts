// Where a read command's --out file (export, proof, checkpoint) can go. It is written whole or
// not at all: to a hidden temporary file in the target's folder, then renamed over the target.
// So the folder must exist and be writable even when the target itself is; an error that named
// only the temporary file (`ENOENT ... open '/dir/.out.jsonl.3f2a….tmp'`) told the user of a
// file they never named and not what to change.
import { dirname, resolve } from 'node:path';
import { UsageError } from './args.js';

const WHY: Record<string, string> = {
  ENOENT: 'its folder does not exist',
  ENOTDIR: 'a part of its path is not a folder',
  EACCES: 'its folder is not writable',
  EPERM: 'its folder is not writable',
  EROFS: 'its folder is on a read-only file system',
  EISDIR: 'it is a folder; give a file path',
};

/** Runs `write` (which opens --out `out`); an error opening it becomes a usage error naming `out` and its folder. */
export async function writingOut<T>(out: string, write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    if (err?.syscall !== 'open' || typeof err.code !== 'string' || !(err.code in WHY)) throw e;
    if (err.code === 'EISDIR') throw new UsageError(`--out ${out}: ${WHY.EISDIR}`);
    throw new UsageError(
      `--out ${out}: cannot write it: ${WHY[err.code]} (${err.code}); it is written to a temporary file in ${dirname(resolve(out))} and renamed, so that folder must exist and be writable`,
    );
  }
}
