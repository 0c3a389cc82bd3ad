// A whole run through a ChainSealer at once, as the ledger streams it: start, push each, end.
import type { ChainSealer, Sealed } from '../../src/ledger/seal.js';
import type { EntryBody } from '../../src/ledger/entry.js';

export function sealAll(sealer: ChainSealer, prev: string, bodies: readonly EntryBody[]): Promise<Sealed[]> {
  const run = sealer.start(prev);
  for (const b of bodies) run.push(b);
  return run.end();
}
