// A home's row whose stored bytes are not the UTF-8 text they are read as (StoredBytesError):
// the entry verify would check is not the one stored, so it is that entry's failure, reported
// where it stands like any other tampered entry, never a lenient reading that verifies.
import { StoredBytesError } from '../../store/sqlite/ledger.js';
import type { Fault } from './chain.js';

export function storedBytesFault(e: unknown): Fault | null {
  if (!(e instanceof StoredBytesError)) return null;
  return { code: 'entry_not_canonical', seq: e.seq, detail: 'entry is stored as bytes that are not UTF-8 (not the text that was signed)' };
}
