// `cloakpipe pins accept`: an operator takes the definitions awaiting review as the new pins.
// The new pins and their operator entries commit in one transaction, or not at all.
import type { PinsPort, Transact } from '../store/ports.js';
import type { Ledger } from '../ledger/ledger.js';

export interface AcceptedPin {
  release: string;
  tool: string;
  from: string;
  to: string;
  /** The operator entry's seq. */
  entry: number;
}

export function acceptPins(
  parts: { pins: PinsPort; ledger: Ledger; transact: Transact },
  filter: { release?: string; tools?: string[] },
  user: string | null,
  now = Date.now(),
): Promise<AcceptedPin[]> {
  return parts.transact(() => {
    const accepted: AcceptedPin[] = [];
    for (const row of parts.pins.list()) {
      if (row.observed === null) continue;
      if (filter.release !== undefined && row.release !== filter.release) continue;
      if (filter.tools && !filter.tools.includes(row.tool)) continue;
      if (!parts.pins.promote(row.release, row.tool, now)) continue;
      const c = { release: row.release, tool: row.tool, from: row.digest, to: row.observed };
      const entry = parts.ledger.appendInTx({ kind: 'operator', action: 'pins_accept', ...c, user }).seq;
      accepted.push({ ...c, entry });
    }
    return accepted;
  });
}
