// A file system that really fills up: a tmpfs of a few megabytes, mounted for one test. Only
// root can mount one (CI runs as root): in CI (CI=true) a mount that fails fails the suite;
// elsewhere the disk-full tests skip, loudly.
import { spawnSync } from 'node:child_process';
import { closeSync, openSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from './cli.js';

function canMount(): string | null {
  if (process.platform !== 'linux') return 'not Linux';
  if (process.getuid?.() !== 0) return 'not root (mounting a tmpfs needs root)';
  const probe = tempDir('cloakpipe-disk-probe-');
  const m = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', probe], { encoding: 'utf8' });
  if (m.status !== 0) return `mount failed: ${(m.stderr || m.error?.message || '').trim()}`;
  spawnSync('umount', [probe]);
  rmSync(probe, { recursive: true, force: true });
  return null;
}

const why = canMount();
if (why) {
  if (process.env.CI === 'true') throw new Error(`cannot mount a small tmpfs (${why}): in CI the disk-full tests must run`);
  process.stderr.write(`\n#### WARNING: cannot mount a small tmpfs (${why}): disk-full tests SKIP ####\n\n`);
}

/** `{ skip }` for node:test where no tmpfs can be mounted (never in CI). */
export const smallDiskSkip = why ? { skip: why } : {};

export interface SmallDisk {
  dir: string;
  /** Writes a file until the file system refuses a byte more (ENOSPC). */
  fill(): void;
  /** Removes what fill() wrote. */
  free(): void;
  unmount(): void;
}

export function mountSmallDisk(megabytes: number): SmallDisk {
  const dir = tempDir('cloakpipe-small-disk-');
  const m = spawnSync('mount', ['-t', 'tmpfs', '-o', `size=${megabytes}m,mode=0700`, 'tmpfs', dir], { encoding: 'utf8' });
  if (m.status !== 0) throw new Error(`mount tmpfs at ${dir}: ${m.stderr}`);
  const filler = join(dir, 'filler');
  return {
    dir,
    fill() {
      const fd = openSync(filler, 'a');
      try {
        // Bounded: the file system is `megabytes` large. Large writes first, then single bytes for the last page.
        for (const size of [65536, 1]) {
          const chunk = Buffer.alloc(size, 0x61);
          for (let i = 0; i < (megabytes * 1024 * 1024) / size + 1; i++) {
            try {
              writeSync(fd, chunk);
            } catch (e) {
              if ((e as NodeJS.ErrnoException).code !== 'ENOSPC') throw e;
              break;
            }
          }
        }
      } finally {
        closeSync(fd);
      }
    },
    free() {
      rmSync(filler, { force: true });
    },
    unmount() {
      spawnSync('umount', ['-l', dir]);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
