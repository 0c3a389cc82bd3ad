// A file that holds a secret the gate signs or logs in with (a private key, a token's PIN): read
// only when it is its reader's own, as ssh reads an identity file. Refused, named: a file others
// may read or write; one owned by another user, who can read it at will or put a key or PIN of
// theirs in it (to have the gate sign with their key, or spend the token's PIN tries); a link
// owned by another user, even to a file of the reader's; anything but a regular file (a FIFO
// would hold the read for ever). Root's files and links are the reader's too: root can do anything.
import { lstatSync } from 'node:fs';
import { readBoundedFile } from '../util/regular-file.js';

export class SecretFileError extends Error {
  /** The file is there and was refused (its owner, mode or kind), not missing or unreadable. */
  constructor(
    message: string,
    readonly refused = true,
  ) {
    super(message);
  }
}

/** Far more than any key or PIN file holds: a larger file is not one. */
const MAX_SECRET_FILE = 64 * 1024;

/** Owned by the user the process runs as, or by root. */
export function ownedByReader(uid: number | bigint): boolean {
  const me = process.geteuid?.();
  return me === undefined || Number(uid) === me || Number(uid) === 0;
}

/**
 * The file's bytes; `what` names it in errors ("gate key", "PIN file"). Never its content in a
 * message.
 */
export function readSecretFile(path: string, what: string, o: { rootGroupReads?: boolean } = {}): Buffer {
  let got: ReturnType<typeof readBoundedFile>;
  try {
    const link = lstatSync(path);
    if (link.isSymbolicLink() && !ownedByReader(link.uid)) throw new SecretFileError(`${what} ${path} is a link owned by another user (uid ${link.uid}): refused`);
    got = readBoundedFile(path, MAX_SECRET_FILE, { followLinks: true });
  } catch (e) {
    if (e instanceof SecretFileError) throw e;
    const code = (e as NodeJS.ErrnoException).code ?? 'error';
    throw new SecretFileError(`cannot read ${what} ${path} (${code})`, code === 'not a regular file');
  }
  if (got === null) throw new SecretFileError(`${what} ${path} is larger than ${MAX_SECRET_FILE / 1024} KiB: not a key or PIN file`);
  const { stat } = got;
  if (!ownedByReader(stat.uid)) throw new SecretFileError(`${what} ${path} is owned by another user (uid ${stat.uid}): it must be yours (mode 0600)`);
  // `rootGroupReads`: a root-owned file its group may read (0640 root:ssl-cert), as PostgreSQL takes a server key.
  const loose = o.rootGroupReads && Number(stat.uid) === 0 ? 0o037 : 0o077;
  if ((Number(stat.mode) & loose) !== 0) throw new SecretFileError(`${what} ${path} is ${looseness(Number(stat.mode))} (mode must be 0600): it is ${octal(Number(stat.mode))}; chmod 600 ${path}`);
  return got.bytes;
}

const octal = (mode: number) => (mode & 0o777).toString(8).padStart(4, '0');

/**
 * Who else may do what, as a person fixes it: 0620 is writable by its group (someone could put
 * their key or token in it), not readable by others. Its group's bits are named only where they
 * go past what others may (0644: "readable by others").
 */
function looseness(mode: number): string {
  const may = (bits: number) => [bits & 4 && 'readable', bits & 2 && 'writable', bits & 1 && 'executable'].filter(Boolean).join(' and ');
  const others = mode & 7;
  const group = (mode >> 3) & 7 & ~others;
  return [others && `${may(others)} by others`, group && `${may(group)} by its group`].filter(Boolean).join(', ');
}
