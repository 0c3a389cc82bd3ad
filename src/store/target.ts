// Which store a command opens: `--store` (or CLOAKPIPE_STORE). `sqlite` (or nothing) is the home's
// own files; `postgres://USER@HOST:PORT/DB` is a fleet's shared database. A password is never
// taken from the command line (it would show in the process list and shell history): pg reads
// PGPASSWORD or ~/.pgpass. Besides pg's own parameters the URL may carry two of ours: `schema`
// and `timeout` (the bound of each of the gate's transactions, ADR 060). The parameters that set
// what the gate sets itself on every connection (its bounds, synchronous_commit) are refused: pg
// lets the URL's values win over the gate's, so `?statement_timeout=0` would lift the bound.
import { parseDuration } from '../util/duration.js';
import { StoreError } from './ports.js';

export type StoreTarget = { kind: 'sqlite' } | { kind: 'postgres'; url: string; schema?: string; timeoutMs?: number };

/** What the gate sets on its connections (postgres/store.ts connectionConfig), never the URL. */
export const GATE_SETTINGS = ['options', 'statement_timeout', 'lock_timeout', 'idle_in_transaction_session_timeout', 'query_timeout'] as const;

/** The bound a store URL's `timeout` may set: long enough for a round trip, short of --call-timeout's default. */
export const STORE_TIMEOUT_MIN_MS = 100;
export const STORE_TIMEOUT_MAX_MS = 60_000;

/** A gate's name in a shared store: short, printable, no spaces. */
export const GATE_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/**
 * Why `name` cannot be the fleet's PostgreSQL schema, or null. Lower-case letters, digits and `_`
 * only, so it is written into SQL as it is (quoted, so a keyword like `user` is a name too); never
 * a system schema (`pg_…`, `information_schema`), which pg_dump leaves out of every backup.
 */
export function schemaProblem(name: string): string | null {
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(name)) return 'must be 1 to 63 lower-case letters, digits or _, not starting with a digit';
  if (name.startsWith('pg_') || name === 'information_schema') return "is a PostgreSQL system schema, which backups (pg_dump) leave out";
  return null;
}

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
  for (const k of GATE_SETTINGS)
    if (u.searchParams.has(k)) throw new StoreError(`--store must not set ${k}: the gate sets it on every connection (its bounds and synchronous_commit = on); the bound is ?timeout=DURATION`);
  const schema = u.searchParams.get('schema') ?? undefined;
  if (schema !== undefined) {
    // Checked here, before any connection: an empty value (an unset variable) fell back to the
    // default schema, another fleet's tables.
    const problem = schemaProblem(schema);
    if (problem) throw new StoreError(`--store schema ${JSON.stringify(schema)} ${problem}`);
    u.searchParams.delete('schema');
  }
  const timeout = u.searchParams.get('timeout') ?? undefined;
  let timeoutMs: number | undefined;
  if (timeout !== undefined) {
    u.searchParams.delete('timeout');
    try {
      timeoutMs = parseDuration(timeout);
    } catch (e) {
      throw new StoreError(`--store timeout: ${(e as Error).message}`);
    }
    if (timeoutMs < STORE_TIMEOUT_MIN_MS || timeoutMs > STORE_TIMEOUT_MAX_MS) throw new StoreError(`--store timeout must be between ${STORE_TIMEOUT_MIN_MS}ms and ${STORE_TIMEOUT_MAX_MS / 1000}s`);
  }
  return { kind: 'postgres', url: u.toString(), ...(schema !== undefined ? { schema } : {}), ...(timeoutMs !== undefined ? { timeoutMs } : {}) };
}
