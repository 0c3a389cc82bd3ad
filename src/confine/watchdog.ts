// The watchdog: a separate process in its own session that removes the container when the
// bridge is gone. Guards against: the bridge being killed (SIGKILL, OOM) or frozen (SIGSTOP,
// a debugger, a wedged event loop) while the container keeps running with nobody reading it.
// The bridge sends payload-free heartbeats (`h<seq>`) every 250 ms over a private inherited
// socketpair (fd 3 in the child) and expects `a<seq>` within 1 s; the watchdog kills and removes
// the container on EOF or after a 2 s lease without a heartbeat (three tries, 5 s each).
// A watchdog that stops acknowledging makes the bridge stop the container. It watches the
// container's name, started before the container is created: a bridge that dies while its
// create is under way leaves no container behind either.
import { spawn } from 'node:child_process';
import type { Duplex } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { Engine } from './engine.js';

export const HEARTBEAT_MS = 250;
export const ACK_TIMEOUT_MS = 1000;
export const LEASE_MS = 2000;
export const CLEANUP_TRIES = 3;
export const CLEANUP_TRY_MS = 5000;
const READY_TIMEOUT_MS = 5000;

export const WATCHDOG_SCRIPT = fileURLToPath(new URL('./watchdog-main.js', import.meta.url));

export interface WatchdogOptions {
  /** The container's name (profile.ts containerName), given before the container exists. */
  container: string;
  socketPath: string;
  /** Test only: ignore missing acknowledgments and EOF (the "no ack check" mutation). */
  ackCheck?: boolean;
  /** Test only: another watchdog program. */
  script?: string;
}

export class WatchdogLink {
  private seq = 0;
  private readonly sent = new Map<number, number>();
  private timer: NodeJS.Timeout | null = null;
  private lostFired = false;
  stopped = false;

  private constructor(
    readonly pid: number,
    private readonly pipe: Duplex,
    private readonly ackCheck: boolean,
    private readonly onLost: () => void,
  ) {}

  /** Spawns the watchdog; resolves once it reported ready and acknowledged a first heartbeat. */
  static start(opts: WatchdogOptions, onLost: () => void): Promise<WatchdogLink> {
    const child = spawn(process.execPath, [opts.script ?? WATCHDOG_SCRIPT, opts.container], {
      detached: true,
      stdio: ['ignore', 'ignore', 'ignore', 'pipe'],
      env: { PATH: process.env.PATH ?? '', CLOAKPIPE_DOCKER_SOCKET: opts.socketPath },
    });
    child.unref();
    const pipe = child.stdio[3] as Duplex;
    return new Promise((resolve, reject) => {
      let link: WatchdogLink | null = null;
      let ready = false;
      let buf = '';
      const fail = () => {
        if (ready && link) return link.lost();
        clearTimeout(t);
        if (link) link.stopped = true;
        pipe.destroy();
        try {
          if (child.pid) process.kill(child.pid, 'SIGKILL'); // the watchdog we started and will not use
        } catch {
          /* gone */
        }
        reject(new Error('the watchdog did not start'));
      };
      const t = setTimeout(fail, READY_TIMEOUT_MS);
      pipe.on('data', (d: Buffer) => {
        buf += d.toString('latin1');
        if (buf.length > 4096) return fail();
        let nl;
        while ((nl = buf.indexOf('\n')) !== -1) {
          const line = buf.slice(0, nl);
          buf = buf.slice(nl + 1);
          if (line === 'r' && !link) {
            link = new WatchdogLink(child.pid!, pipe, opts.ackCheck ?? true, onLost);
            link.beat();
          } else if (link && /^a[0-9]{1,15}$/.test(line)) {
            const n = Number(line.slice(1));
            for (const k of link.sent.keys()) if (k <= n) link.sent.delete(k);
            if (n === 1 && !ready) {
              ready = true;
              clearTimeout(t);
              link.timer = setInterval(() => link!.tick(), HEARTBEAT_MS);
              resolve(link);
            }
          } else return fail();
        }
      });
      pipe.on('error', fail);
      pipe.on('close', fail);
      child.on('error', fail);
    });
  }

  private beat(): void {
    this.seq += 1;
    this.sent.set(this.seq, Date.now());
    this.pipe.write(`h${this.seq}\n`);
  }

  private tick(): void {
    if (this.stopped) return;
    const now = Date.now();
    for (const at of this.sent.values()) if (now - at > ACK_TIMEOUT_MS) return this.lost();
    this.beat();
  }

  private lost(): void {
    if (this.stopped || this.lostFired || !this.ackCheck) return;
    this.lostFired = true;
    this.onLost();
  }

  /** End of session: closing the pipe makes the watchdog do its (idempotent) cleanup and exit. */
  stop(): void {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.pipe.destroy();
  }
}

/** Kill and remove (by id or name), up to three tries of 5 s each. True when the container is gone. */
export async function killAndRemove(engine: Engine, id: string, tries = CLEANUP_TRIES): Promise<boolean> {
  for (let i = 0; i < tries; i++) {
    try {
      await engine.kill(id);
      await engine.remove(id);
      if ((await engine.inspectOrNull(id)) === null) return true;
    } catch {
      /* try again */
    }
  }
  return false;
}
