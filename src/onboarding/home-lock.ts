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

/** Takes the home's wrap lock, or throws HomeBusy naming the run that holds it; returns its release. */
export function lockHome(homeDir: string): () => void {
  const path = join(homeDir, 'wrap.lock');
  for (let tries = 0; tries < 2; tries++) {
    let fd;
    try {
      fd = openSync(path, 'wx', 0o600);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      let pid = NaN;
      let start: string | undefined;
      let written = 0;
      try {
        const words = readFileSync(path, 'utf8').split(' ');
        pid = Number(words[0] || NaN);
        start = words[1] || undefined;
        written = statSync(path).mtimeMs;
      } catch {
        continue; // released meanwhile
      }
      // A file not yet written (its creator between open and write) is held while young.
      const young = Date.now() - written < 10_000;
      if (Number.isSafeInteger(pid) && pid > 0 ? held(pid, start, written) : young) throw new HomeBusy(`another wrap or unwrap is running on this home${pid > 0 ? ` (pid ${pid})` : ''}; run this one when it is done`);
      rmSync(path, { force: true }); // its run was killed
      continue;
    }
    try {
      const me = startOf(process.pid);
      writeSync(fd, me === undefined ? String(process.pid) : `${process.pid} ${me}`);
    } catch (e) {
      rmSync(path, { force: true }); // a full disk: no lock left that a next run would wait on
      throw e;
    } finally {
      closeSync(fd);
    }
    return () => rmSync(path, { force: true });
  }
  throw new HomeBusy('another wrap or unwrap is running on this home; run this one when it is done');
}
