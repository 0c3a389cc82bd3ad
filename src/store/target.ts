// Which store a command opens: `--store` (or CLOAKPIPE_STORE). `sqlite` (or nothing) is the home's
// own files; `postgres://USER@HOST:PORT/DB` is a fleet's shared database. A password is never
// taken from the command line (it would show in the process list and shell history): pg reads
// PGPASSWORD or ~/.pgpass.
import { StoreError } from './ports.js';

export type StoreTarget = { kind: 'sqlite' } | { kind: 'postgres'; url: string; schema?: string };

/** A gate's name in a shared store: short, printable, no spaces. */
export const GATE_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

export function storeTarget(flag?: string, env: NodeJS.ProcessEnv = process.env): StoreTarget {
  const value = flag ?? env.CLOAKPIPE_STORE ?? '';
  if (value === '' || value === 'sqlite') return { kind: 'sqlite' };
  if (!/^postgres(ql)?:\/\//.test(value)) throw new StoreError('--store must be sqlite or postgres://USER@HOST:PORT/DB');
  let u: URL;
  try {
    u = new URL(value);
  } catch {
    throw new StoreError('--store: not a valid postgres:// URL');
  }
  if (u.password !== '' || u.searchParams.has('password'))
    throw new StoreError('--store must not hold a password (it would show in the process list): use PGPASSWORD or ~/.pgpass');
  const schema = u.searchParams.get('schema') ?? undefined;
  if (schema !== undefined) u.searchParams.delete('schema');
  return { kind: 'postgres', url: u.toString(), ...(schema ? { schema } : {}) };
}
