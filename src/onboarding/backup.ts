// A copy of a host's config, kept in the home before wrap or unwrap rewrites it. Named by the
// config's path and the instant; two rewrites within one millisecond (wrap, then unwrap, in a
// script) must not share a name, or the second copy would replace the first and the original
// config would be gone. The name is claimed with an exclusive create before the copy is written.
import { createHash } from 'node:crypto';
import { closeSync, mkdirSync, openSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { atomicWrite } from '../util/atomic-write.js';

/** The path's part of a backup's name, at most this long: a file name is 255 bytes at most, and the instant and a counter follow. */
const MAX_PATH_PART = 180;

/** The config's path as a file name; a long one keeps its end (the file's own name) and a digest of the whole. */
function nameOf(path: string): string {
  const name = path.replace(/[^A-Za-z0-9_.-]+/g, '_').replace(/^_+/, '');
  if (name.length <= MAX_PATH_PART) return name;
  // A config deep in a project: its whole path as a name was refused (ENAMETOOLONG) and wrap with it.
  const digest = createHash('sha256').update(path).digest('hex').slice(0, 16);
  return `${name.slice(-(MAX_PATH_PART - digest.length - 1)).replace(/^[._-]+/, '')}-${digest}`;
}

export function backup(homeDir: string, path: string, text: string, now = new Date()): string {
  const dir = join(homeDir, 'backups');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const base = join(dir, `${nameOf(path)}.${now.toISOString().replace(/[:.]/g, '-')}`);
  for (let n = 0; ; n++) {
    const file = n === 0 ? base : `${base}.${n}`;
    try {
      closeSync(openSync(file, 'wx', 0o600));
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'EEXIST') continue;
      throw e;
    }
    try {
      atomicWrite(file, text, 0o600);
    } catch (e) {
      rmSync(file, { force: true }); // no empty backup left to mistake for the file's old bytes
      throw e;
    }
    return file;
  }
}
