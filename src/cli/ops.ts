// cloakpipe ops list | show | reconcile: the operator's view of operations of write tools. An
// operation whose outcome is unknown (the gate or upstream died, or the call timed out) is
// refused `reconcile_before_retry` until a person finds out what happened and says so here;
// that statement is itself a ledger entry, signed by the gate key, in the same transaction.
import { readFileSync } from 'node:fs';
import { parseFlags, UsageError } from './args.js';
import { displayJson } from './approve.js';
import { checkHomeDir, openHomeWith, type OpenedHome } from '../home/open.js';
import { resolveHome } from '../store/home.js';
import { storeTarget } from '../store/target.js';
import { openOperationsReader } from '../store/sqlite/store.js';
import type { OperationsPort } from '../store/ports.js';
import { opening, STORE_OPTION } from './store-flags.js';
import { OPERATION_STATES, Operations, ReconcileError, type Operation, type OperationState, type ReconcileOutcome } from '../operations/operations.js';
import { reconcileOperation } from '../operations/reconcile.js';
import { operationDigest } from '../operations/operation-id.js';
import { parseStrict } from '../wire/strict-parse.js';
import { isJsonObject, type JsonValue } from '../core/json.js';
import { visible } from './visible.js';

const HELP = `usage: cloakpipe ops list [--state STATE] [--json] [--home DIR] [--store URL]
       cloakpipe ops show ID [--json] [--home DIR] [--store URL]
       cloakpipe ops reconcile ID --outcome succeeded|failed|not-executed [--result FILE] [--owner-gone]
                               [--json] [--home DIR] [--store URL]

Operations are the calls of write tools, keyed by operation id (the manifest's operation_id
argument, else params._meta["cloakpipe/operation_id"], else the call's fingerprint).
States: pending (in flight), succeeded, failed (result stored), unknown (nobody knows whether
it ran: the gate or the upstream died, or the call timed out).

list       operations, oldest change first; --state pending|succeeded|failed|unknown
show       one operation with its stored result
reconcile  settle an unknown operation (or a pending one whose gate is no longer running)
           after finding out what happened:
             succeeded     it ran; the same call is answered from the store from now on, with
                           --result FILE (a tools/call result object) or a note saying so
             failed        it ran and failed; the same call may be tried again
             not-executed  it never ran; the same call may be tried again
           Recorded in the ledger as an operator entry (needs the gate key). A pending
           operation of a gate that is still running cannot be reconciled: it will settle,
           or stop that gate first. One pending on a gate of another host (a fleet's store)
           needs --owner-gone: this host cannot see that gate; check it is stopped first.

--store URL (or CLOAKPIPE_STORE): a fleet's shared PostgreSQL store, whose operations every gate
shares; reconcile is recorded in the chain of this home's gate.

Exit status: 0 done, 1 no such operation or it cannot be reconciled, 2 usage or store error.
`;

const OUTCOMES: ReconcileOutcome[] = ['succeeded', 'failed', 'not-executed'];

export async function run(argv: string[]): Promise<number> {
  const [sub, ...rest] = argv;
  if (!sub || sub === '--help' || sub === '-h') {
    process.stdout.write(HELP);
    return sub ? 0 : 2;
  }
  switch (sub) {
    case 'list':
      return list(rest);
    case 'show':
      return show(rest);
    case 'reconcile':
      return reconcile(rest);
    default:
      throw new UsageError(`unknown subcommand "${sub}" (list, show, reconcile)`);
  }
}

function open(values: { home?: unknown; store?: unknown }): Promise<OpenedHome> {
  return opening(() => openHomeWith({ home: values.home as string | undefined, store: values.store as string | undefined }));
}

/**
 * `read(fn)` runs fn over the operations for list and show, read-only and without the gate key
 * (nor a token's PIN): a reader never creates, migrates or locks a running gate's store. A home's
 * operations.db is opened read-only; a shared store is read in READ ONLY transactions that take
 * no row lock, and needs no home at all (the fleet's operations are every gate's).
 */
async function reading(values: { home?: unknown; store?: unknown }): Promise<{ read<T>(fn: (ops: OperationsPort) => T): Promise<T>; close(): Promise<void> }> {
  const target = storeTarget(values.store as string | undefined);
  if (target.kind === 'sqlite') {
    const r = await opening(() => {
      const paths = resolveHome(values.home as string | undefined);
      checkHomeDir(paths);
      return openOperationsReader(paths.operations);
    });
    return { read: async (fn) => fn(r.operations), close: async () => r.close() };
  }
  const { openPostgresOperationsReader } = await import('../store/postgres/store.js');
  const r = await opening(() => openPostgresOperationsReader(target));
  return { read: (fn) => r.read(fn), close: () => r.end() };
}

/** An id as given, or as a JSON string when it holds anything a terminal might interpret. */
function shown(id: string): string {
  return /^[\x21-\x7e]+$/.test(id) ? id : displayJson(id);
}

function summary(o: Operation) {
  return { id: o.id, state: o.state, tool: o.tool, attempts: o.attempts, fingerprint: o.fingerprint, note: o.note, created_at: o.created_at, updated_at: o.updated_at };
}

async function list(argv: string[]): Promise<number> {
  const { values } = parseFlags(argv, { state: { type: 'string' }, json: { type: 'boolean' }, home: { type: 'string' }, ...STORE_OPTION });
  if (values.help) return void process.stdout.write(HELP), 0;
  const state = values.state as string | undefined;
  if (state !== undefined && !(OPERATION_STATES as readonly string[]).includes(state))
    throw new UsageError(`--state must be one of ${OPERATION_STATES.join(', ')}`);
  const h = await reading(values);
  try {
    const ops = await h.read((port) => new Operations(port).list(state as OperationState | undefined));
    if (values.json) {
      for (const o of ops) process.stdout.write(JSON.stringify(summary(o)) + '\n');
    } else {
      process.stdout.write(`${'STATE'.padEnd(10)} ${'TOOL'.padEnd(20)} ${'ATT'.padEnd(4)} ${'UPDATED'.padEnd(24)} ID\n`);
      for (const o of ops)
        process.stdout.write(visible(`${o.state.padEnd(10)} ${o.tool.padEnd(20)} ${String(o.attempts).padEnd(4)} ${o.updated_at.padEnd(24)}`) + ` ${shown(o.id)}\n`);
    }
    return 0;
  } finally {
    await h.close();
  }
}

function oneId(positionals: string[]): string {
  if (positionals.length !== 1) throw new UsageError('give exactly one operation ID');
  return positionals[0];
}

async function show(argv: string[]): Promise<number> {
  const { values, positionals } = parseFlags(argv, { json: { type: 'boolean' }, home: { type: 'string' }, ...STORE_OPTION }, true);
  if (values.help) return void process.stdout.write(HELP), 0;
  const id = oneId(positionals);
  const h = await reading(values);
  try {
    const o = await h.read((port) => port.get(id));
    if (!o) {
      process.stderr.write(`cloakpipe ops: no operation ${shown(id)}\n`);
      return 1;
    }
    if (values.json) process.stdout.write(JSON.stringify({ ...summary(o), operation: operationDigest(o.id), result: o.result, error: o.error }) + '\n');
    else {
      const s = summary(o);
      for (const [k, v] of Object.entries(s)) process.stdout.write(`${k.padEnd(12)} ${k === 'id' ? shown(String(v)) : visible(String(v))}\n`);
      process.stdout.write(`${'operation'.padEnd(12)} ${operationDigest(o.id)}\n`);
      if (o.result !== null) process.stdout.write(`result\n${displayJson(o.result)}\n`);
      if (o.error !== null) process.stdout.write(`error\n${displayJson(o.error)}\n`);
    }
    return 0;
  } finally {
    await h.close();
  }
}

function readResultFile(path: string): JsonValue {
  let v: JsonValue;
  try {
    const buf = readFileSync(path);
    if (buf.length > 4 * 1024 * 1024) throw new Error('larger than 4 MiB');
    v = parseStrict(new TextDecoder('utf-8', { fatal: true }).decode(buf).trim());
  } catch (e) {
    throw new UsageError(`--result ${path}: not a readable strict JSON file (${(e as Error).message})`);
  }
  if (!isJsonObject(v)) throw new UsageError(`--result ${path}: must be a tools/call result object`);
  return v;
}

async function reconcile(argv: string[]): Promise<number> {
  const { values, positionals } = parseFlags(
    argv,
    { outcome: { type: 'string' }, result: { type: 'string' }, 'owner-gone': { type: 'boolean' }, json: { type: 'boolean' }, home: { type: 'string' }, ...STORE_OPTION },
    true,
  );
  if (values.help) return void process.stdout.write(HELP), 0;
  const id = oneId(positionals);
  const outcome = values.outcome as ReconcileOutcome | undefined;
  if (!outcome || !OUTCOMES.includes(outcome)) throw new UsageError(`--outcome must be one of ${OUTCOMES.join(', ')}`);
  if (values.result !== undefined && outcome === 'not-executed') throw new UsageError('--result goes with succeeded or failed');
  const result = values.result !== undefined ? readResultFile(values.result as string) : null;
  const h = await open(values);
  try {
    const parts = { operations: new Operations(h.store.operations), ledger: h.ledger, transact: h.store.transact };
    const { before, after, entry } = await reconcileOperation(parts, id, outcome, result, process.env.USER ?? null, Date.now(), values['owner-gone'] === true);
    if (values.json) process.stdout.write(JSON.stringify({ id, from: before.state, state: after.state, outcome, entry }) + '\n');
    else process.stdout.write(`${shown(id)}: ${before.state} → ${after.state} (${outcome}); ledger entry ${entry}\n`);
    return 0;
  } catch (e) {
    if (e instanceof ReconcileError) {
      process.stderr.write(`cloakpipe ops reconcile: ${e.message}\n`);
      return 1;
    }
    throw e;
  } finally {
    h.close();
  }
}
