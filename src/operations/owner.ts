// Who owns a `pending` operation, and whether that gate still runs. An owner names its host, its
// pid, when that process started, and a per-process nonce: `host/pid/start/nonce`. The pid alone
// is not enough: after a reboot (or on a busy host) the pid of a dead gate is reused by another
// process, and a pending left by the dead gate would stay pending for good, with `ops reconcile`
// refusing it as "in flight on a running gate". The start (the kernel's boot id and the process's
// start time since boot, both from /proc) tells the two apart. Where /proc is absent the start is
// `-` and only the pid is checked, as owners of the older `host/pid/nonce` form are.
// The host is its name and the pid namespace the gate runs in: containers that share a host name
// (host networking) each number their own processes, and a pid from another namespace names
// another process here; such an owner is on another host, whose liveness this one cannot tell.
import { readFileSync, readlinkSync } from 'node:fs';
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';

const OWNER = /^(.*)\/([0-9]+)\/(?:([0-9a-f-]+\.[0-9]+|-)\/)?([0-9a-f]+)$/;

let bootId: string | null | undefined;

/** `BOOTID.STARTTIME` of a process on this host, or null when /proc cannot tell (gone, or no /proc). */
export function processStart(pid: number): string | null {
  try {
    if (bootId === undefined) bootId = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
    if (!bootId) return null;
    // Field 22 of stat is the start time; the command name (field 2) may hold spaces and
    // parentheses, so count from the last ')'.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const start = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
    return start && /^[0-9]+$/.test(start) ? `${bootId}.${start}` : null;
  } catch {
    return null;
  }
}

/** This host as its pids tell: the host name, with the pid namespace where /proc names it. */
function pidHost(): string {
  try {
    const ns = /^pid:\[([0-9]+)\]$/.exec(readlinkSync('/proc/self/ns/pid'));
    if (ns) return `${hostname()}#pidns${ns[1]}`;
  } catch {
    // no /proc: the host name alone
  }
  return hostname();
}

const HOST = pidHost();

/** This process, as the owner of the operations it starts. */
export const THIS_GATE = `${HOST}/${process.pid}/${processStart(process.pid) ?? '-'}/${randomBytes(6).toString('hex')}`;

/** An owner's host is this one: the same name and pid namespace (or a bare name, as older gates wrote it). */
const here = (host: string) => host === HOST || host === hostname();

/** Does `owner` name a process on this host (whose liveness this host can tell)? */
export function ownerOnThisHost(owner: string | null): boolean {
  const m = owner ? OWNER.exec(owner) : null;
  return !!m && here(m[1]);
}

/**
 * Does `owner` name a process of another pid namespace on this kernel (its start names this boot):
 * a container beside this one, on a home they share. Its liveness cannot be read from here.
 */
export function ownerBesideThisHost(owner: string | null): boolean {
  const m = owner ? OWNER.exec(owner) : null;
  if (!m || here(m[1]) || m[3] === undefined || m[3] === '-') return false;
  const boot = processStart(process.pid)?.split('.')[0];
  return boot !== undefined && m[3].split('.')[0] === boot;
}

/** Is the gate that owns a pending operation still running? Unknown hosts count as gone. */
export function ownerAlive(owner: string | null): boolean {
  if (!owner) return false;
  if (owner === THIS_GATE) return true;
  const m = OWNER.exec(owner);
  if (!m || !here(m[1])) return false;
  const pid = Number(m[2]);
  if (pid === process.pid) return false; // an earlier process that had our pid
  try {
    process.kill(pid, 0);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  // A process runs under that pid; it is the owner only if it started when the owner did.
  const start = m[3];
  if (start === undefined || start === '-') return true;
  const now = processStart(pid);
  return now === null ? true : now === start;
}
