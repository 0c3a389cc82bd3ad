// One wrap or unwrap at a time per home. Each reads a server's record (servers/NAME/wrapped.json)
// when it starts and writes it back, with its config's entry, after drafting: two runs at once
// on two configs with a server of one name each wrote the record they had read, and the later
// one dropped the other's entry; that config could then not be unwrapped. The lock is a file
// created exclusively, holding its process id; one whose process is gone (a killed run) is taken.
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
      let young = false;
      try {
        pid = Number(readFileSync(path, 'utf8') || NaN);
        young = Date.now() - statSync(path).mtimeMs < 10_000;
      } catch {
        continue; // released meanwhile
      }
      // A file not yet written (its creator between open and write) is held while young.
      if (Number.isSafeInteger(pid) && pid > 0 ? alive(pid) : young) throw new HomeBusy(`another wrap or unwrap is running on this home${pid > 0 ? ` (pid ${pid})` : ''}; run this one when it is done`);
      rmSync(path, { force: true }); // its run was killed
      continue;
    }
    try {
      writeSync(fd, String(process.pid));
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
