// A host's config file on disk: read as the host would find it, and replaced only as the user
// left it (ADR 083). The replace writes the new config, with the config's mode and owner, inside
// a folder beside it that only we may enter (the config may hold credentials in "env"), and
// renames it over the config only when the config is still the one read: a host that saved its
// settings meanwhile keeps them. A kill at any instant leaves the config whole with its own mode,
// and at most a copy no one else may reach; the next run removes such a copy.
import { accessSync, chmodSync, closeSync, constants, fchmodSync, fchownSync, fsyncSync, lstatSync, mkdirSync, openSync, readdirSync, renameSync, rmSync, statSync, type BigIntStats } from 'node:fs';
import { basename, dirname, isAbsolute, join, relative, sep } from 'node:path';
import { realTarget, syncFolder, tempBeside, tempStem, writeAll } from '../util/atomic-write.js';
import { readBoundedFile } from '../util/regular-file.js';
import { ConfigError, decodeConfig } from './host-config.js';
import type { HostConfig } from './hosts.js';

/** Host configs are small; the largest, Claude Code's ~/.claude.json, grows with its history. */
const MAX_CONFIG_BYTES = 64 * 1024 * 1024;

/** The config as read: its text and the file it was read from (inode, size, times). */
export interface ConfigRead {
  text: string;
  stat: BigIntStats;
}

/**
 * The config's text; undefined when there is none. Opened without waiting and read only when a
 * regular file: a FIFO or a link to a device in its place stopped wrap for good, and a folder
 * ended the whole run with a message that did not say which file. Now named, and the next config
 * is done.
 */
export function readConfig(cfg: HostConfig): ConfigRead | undefined {
  if (linkedFromProject(cfg))
    throw new ConfigError(`${cfg.path}: a symbolic link in the project, to ${realTarget(cfg.path)}: left as is: a repository can point it at another config (~/.claude.json, another user's); name the file with --host FILE to wrap it`);
  let read;
  try {
    read = readBoundedFile(realTarget(cfg.path), MAX_CONFIG_BYTES, { followLinks: true });
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return undefined;
    if (typeof code === 'string') throw new ConfigError(`${cfg.path}: cannot be read (${code === 'not a regular file' ? code : (e as Error).message}); left as is`);
    throw e;
  }
  if (read === null) throw new ConfigError(`${cfg.path}: larger than ${MAX_CONFIG_BYTES / 1024 / 1024} MiB; left as is`);
  return { text: decodeConfig(cfg, read.bytes), stat: read.stat };
}

/**
 * A project's config reached through a link the project holds (.mcp.json, or its .vscode/ or
 * .cursor/ folder): the repository chose where it leads, and wrap would rewrite that file, and
 * start its servers, as this project's.
 */
function linkedFromProject(cfg: HostConfig): boolean {
  if (cfg.within === undefined) return false;
  const rel = relative(cfg.within, cfg.path);
  if (rel === '' || rel.startsWith('..') || isAbsolute(rel)) return false;
  let at = cfg.within;
  for (const part of rel.split(sep)) {
    at = join(at, part);
    try {
      if (lstatSync(at).isSymbolicLink()) return true;
    } catch {
      return false; // not there: no config to read
    }
  }
  return false;
}

const escapeRe = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * Copies of the config left beside it by a wrap or unwrap that was killed while replacing it
 * (they hold the whole config, its "env" secrets too): removed, and their paths returned. Only
 * private folders (and, from before ADR 083's amendment, regular files) of that exact name
 * pattern owned by the config's owner or by us; a link is never followed. `dryRun`: named, not
 * removed.
 */
export function removeLeftovers(cfg: HostConfig, dryRun: boolean): string[] {
  if (linkedFromProject(cfg)) return []; // beside a file the project's link chose: not ours to touch (readConfig names it)
  const target = realTarget(cfg.path);
  const dir = dirname(target);
  const pattern = new RegExp(`^\\.${escapeRe(tempStem(basename(target)))}\\.[0-9a-f]{12}\\.tmp$`);
  let names: string[];
  try {
    names = readdirSync(dir).filter((n) => pattern.test(n));
  } catch {
    return [];
  }
  let owner: number | undefined;
  try {
    owner = statSync(target).uid;
  } catch {
    owner = undefined;
  }
  const me = process.geteuid?.();
  const out: string[] = [];
  for (const n of names) {
    const p = join(dir, n);
    try {
      const st = lstatSync(p);
      if (!(st.isFile() || st.isDirectory()) || (st.uid !== me && st.uid !== owner)) continue;
      if (!dryRun) rmSync(p, { recursive: true }); // a folder's links are removed, not followed
      out.push(p);
    } catch {
      // gone meanwhile (another run took it): nothing left to remove
    }
  }
  return out;
}

const octal = (mode: bigint | number) => (Number(mode) & 0o7777).toString(8).padStart(4, '0');

/** The same file, unchanged since it was read: same inode, size, modification and change times. */
function sameFile(a: BigIntStats, b: BigIntStats): boolean {
  return a.dev === b.dev && a.ino === b.ino && a.size === b.size && a.mtimeNs === b.mtimeNs && a.ctimeNs === b.ctimeNs;
}

/**
 * Replaces the config with `after` unless it changed since `read` (a host saving its own
 * settings), is read-only (the user made it so), or could not keep its owner. Throws a
 * ConfigError naming why; the config is then as it was.
 */
export function replaceConfig(cfg: HostConfig, read: ConfigRead, after: string): void {
  const target = realTarget(cfg.path);
  const changed = () => new ConfigError(`${cfg.path} changed while wrap ran; left as is, run it again`);
  const st = statSync(target, { bigint: true });
  if (!sameFile(st, read.stat)) throw changed();
  // Read-only by its mode: refused even for root, whom the file system would let through.
  if ((st.mode & 0o222n) === 0n) throw new ConfigError(`${cfg.path}: read-only (mode ${octal(st.mode)}); left as is: make it writable (chmod u+w) to let wrap or unwrap change it`);
  try {
    accessSync(target, constants.W_OK);
  } catch {
    throw new ConfigError(`${cfg.path}: not writable by this user; left as is`);
  }
  // The new config is written with its final mode inside a folder only we may enter, then
  // renamed out of it: no instant shows the copy to others or the config with another mode.
  const folder = tempBeside(target); // the name removeLeftovers looks for
  mkdirSync(folder, 0o700);
  let renamed = false;
  try {
    chmodSync(folder, 0o700); // whatever the umask: we must write in it, no one else may enter
    const tmp = join(folder, basename(target));
    const fd = openSync(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
    try {
      fchmodSync(fd, Number(st.mode & 0o7777n)); // the umask narrowed openSync's mode
      writeAll(fd, after);
      const uid = Number(st.uid);
      const gid = Number(st.gid);
      if (uid !== process.geteuid?.() || gid !== process.getegid?.()) {
        try {
          fchownSync(fd, uid, gid);
        } catch (e) {
          throw new ConfigError(`${cfg.path}: owned by uid ${uid} gid ${gid}, which this user cannot give the new file (${(e as NodeJS.ErrnoException).code}); left as is`);
        }
        fchmodSync(fd, Number(st.mode & 0o7777n)); // chown clears set-id bits
      }
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    // The last look: a host that wrote the file after it was read keeps what it wrote. Its
    // bytes too, for a write within the file system's time granularity.
    const now = readConfig(cfg);
    if (!now || now.text !== read.text || !sameFile(now.stat, read.stat)) throw changed();
    renameSync(tmp, target);
    renamed = true;
  } finally {
    rmSync(folder, { recursive: true, force: true });
    if (renamed) syncFolder(dirname(target));
  }
}
