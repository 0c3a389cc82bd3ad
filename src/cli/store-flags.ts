// The flags of every command that opens state (fleet.md): which store (--store, else
// CLOAKPIPE_STORE, else the home's SQLite files) and, in a shared store, whose chain (--gate).
import { UsageError, type Options } from './args.js';
import { StoreError } from '../store/ports.js';
import { GATE_ID } from '../store/target.js';
import { visible } from './visible.js';

export const STORE_OPTION = {
  store: {
    type: 'string',
    arg: 'URL',
    help: 'sqlite, or postgres://USER@HOST:PORT/DB shared by a fleet of gates (password: PGPASSWORD or ~/.pgpass)',
    defaultText: '$CLOAKPIPE_STORE or sqlite',
  },
} satisfies Options;

export const GATE_OPTION = {
  gate: { type: 'string', arg: 'NAME', help: "another gate's chain in the shared store", defaultText: "this home's gate" },
} satisfies Options;

/** A home or store that cannot be opened is a configuration error (exit 2), named. */
export async function opening<T>(open: () => T | Promise<T>): Promise<T> {
  try {
    return await open();
  } catch (e) {
    const { HomeError } = await import('../home/open.js');
    if (e instanceof HomeError || e instanceof StoreError) throw new UsageError(e.message);
    throw e;
  }
}

/**
 * A gate's name as the store holds it, for the auditor's terminal: a name init would not accept
 * (a row written around init) is quoted and its hidden characters escaped, so an escape
 * sequence in it cannot hide or rewrite the verdict printed after it.
 */
export function shownGate(id: string): string {
  return GATE_ID.test(id) ? id : visible(JSON.stringify(id));
}
