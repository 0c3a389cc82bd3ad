// One wrap or unwrap at a time per home. Each reads a server's record (servers/NAME/wrapped.json)
// when it starts and writes it back, with its config's entry, after drafting: two runs at once
// on two configs with a server of one name each wrote the record they had read, and the later
// one dropped the other's entry; that config could then not be unwrapped. The lock is a file
// created exclusively, naming its process by pid and start time (pids are reused: a killed run's
// may be another live process's by now); one whose process is gone (a killed run) is taken.
import { closeSync, openSync, readFileSync, rmSync, statSync, writeSync } from 'node:fs';
import { join } from 'node:path';

export class HomeBusy extends Error {}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
};

/** When process `pid` started (/proc/PID/stat field 22, clock ticks after boot); undefined where there is no /proc. */
function startOf(pid: number): string | undefined {
  try {
    // The command name (field 2) may hold spaces and ')': the fields after it follow the last ')'.
    return readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /s, '').split(' ')[19];
  } catch {
    return undefined;
  }
}

/** Linux's clock ticks a second as /proc reports them (USER_HZ). */
const TICKS = 100;

/** When process `pid` started, in ms since the epoch (boot time from /proc/stat); undefined where there is no /proc. */
function startedAt(pid: number): number | undefined {
  const start = startOf(pid);
  try {
    const boot = /^btime (\d+)$/m.exec(readFileSync('/proc/stat', 'utf8'));
    return start === undefined || !boot ? undefined : Number(boot[1]) * 1000 + (Number(start) * 1000) / TICKS;
  } catch {
    return undefined;
  }
}

/**
 * The lock's run is still running: its pid is alive and is the same process, by start time; a
 * lock holding a pid alone (written before start times were) by a process that started before
 * the lock was written. Without /proc, the pid alone.
 */
function held(pid: number, start: string | undefined, written: number): boolean {
  if (!alive(pid)) return false;
  if (start !== undefined) {
    const now = startOf(pid);
    return now === undefined || now === start;
  }
  const at = startedAt(pid);
  return at === undefined || at <= written + 1000; // a second for the clocks' rounding
}

/** A lock file not yet written (its creator between open and write) is held while this young. */
const YOUNG_MS = 10_000;

const busy = (pid?: number) => new HomeBusy(`another wrap or unwrap is running on this home${pid ? ` (pid ${pid})` : ''}; run this one when it is done`);

/** Who holds the lock at `path` and whether that run still runs; undefined when there is none (released meanwhile). */
function holderOf(path: string): { pid?: number; held: boolean } | undefined {
  let pid = NaN;
  let start: string | undefined;
  let written = 0;
  try {
    const words = readFileSync(path, 'utf8').split(' ');
    pid = Number(words[0] || NaN);
    start = words[1] || undefined;
    written = statSync(path).mtimeMs;
  } catch {
    return undefined;
  }
  if (Number.isSafeInteger(pid) && pid > 0) return { pid, held: held(pid, start, written) };
  return { held: Date.now() - written < YOUNG_MS };
}

/**
 * Removes the lock at `path` if its run is gone, judged again while holding PATH.takeover
 * (created exclusively): two runs that found one stale lock each removed the file, and the later
 * removal could be of the lock the earlier run had taken meanwhile, so both ran on the home. The
 * guard lives for a read and an unlink; one older than YOUNG_MS was left by a run killed in them.
 */
function removeStale(path: string): void {
  const guard = `${path}.takeover`;
  let fd;
  try {
    fd = openSync(guard, 'wx', 0o600);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    try {
      if (Date.now() - statSync(guard).mtimeMs > YOUNG_MS) rmSync(guard, { force: true });
    } catch {
      // released meanwhile
    }
    return;
  }
  try {
    if (holderOf(path)?.held === false) rmSync(path, { force: true }); // its run was killed
  } finally {
    closeSync(fd);
    rmSync(guard, { force: true });
  }
}

/** Takes the home's wrap lock, or throws HomeBusy naming the run that holds it; returns its release. */
export function lockHome(homeDir: string): () => void {
  const path = join(homeDir, 'wrap.lock');
  for (let tries = 0; tries < 3; tries++) {
    let fd;
    try {
      fd = openSync(path, 'wx', 0o600);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      const holder = holderOf(path);
      if (holder?.held) throw busy(holder.pid);
      if (holder) removeStale(path);
      continue;
    }
    const me = startOf(process.pid);
    const text = me === undefined ? String(process.pid) : `${process.pid} ${me}`;
    try {
      writeSync(fd, text);
    } catch (e) {
      rmSync(path, { force: true }); // a full disk: no lock left that a next run would wait on
      throw e;
    } finally {
      closeSync(fd);
    }
    // Only its own: a lock that is not (taken as stale by mistake) stays its holder's.
    return () => {
      try {
        if (readFileSync(path, 'utf8') === text) rmSync(path, { force: true });
      } catch {
        // gone already
      }
    };
  }
  throw busy();
}
