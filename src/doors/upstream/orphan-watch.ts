// The upstream never outlives the gate (product.md 7a), also when the gate is SIGKILLed (the
// OOM killer, a host killing its process group), which runs no code of the gate's: an upstream
// that ignores its stdin closing would stay. A watchdog beside it holds a pipe from the gate and,
// when the pipe closes without a word, which only the gate's death does, stops the upstream as a
// stop would (SIGTERM, SIGKILL 2 s later). When the upstream exits first the gate says "done" and
// the watchdog leaves. It is a one-line POSIX shell script, in a process group of its own so
// that a signal to the gate's group does not take it first; the pid is its argument, never
// part of the script. Its environment is PATH alone: the gate's own holds its secrets (a token's
// PIN, the store's password), and a shell that only kills needs none of them.
import { spawn, type ChildProcess } from 'node:child_process';
import type { Socket } from 'node:net';
import { log } from '../../telemetry/log.js';

const SCRIPT = 'read -r word; [ "$word" = done ] || { kill -TERM "$1" 2>/dev/null && sleep 2 && kill -KILL "$1" 2>/dev/null; }';

/** Watches `child` for the gate's death; a no-op where there is no POSIX shell (Windows). */
export function watchForOrphan(child: ChildProcess): void {
  if (process.platform === 'win32' || child.pid === undefined) return;
  let watchdog: ChildProcess;
  // Without a shell to run it, the exit guard still covers every exit but SIGKILL: said on stderr.
  let told = false;
  const unavailable = () => void (told || ((told = true), log.warn('upstream_orphan_watch_unavailable')));
  try {
    watchdog = spawn('/bin/sh', ['-c', SCRIPT, 'cloakpipe-orphan-watch', String(child.pid)], {
      stdio: ['pipe', 'ignore', 'ignore'],
      detached: true,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
    });
  } catch {
    return unavailable();
  }
  watchdog.on('error', unavailable);
  const pipe = watchdog.stdin as Socket;
  pipe.on('error', () => undefined);
  // Neither keeps the gate's event loop alive: the gate ends when its work does.
  watchdog.unref();
  pipe.unref();
  child.once('exit', () => pipe.end('done\n'));
}
