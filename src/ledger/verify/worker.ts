// A signature-checking worker: receives batches of entry lines and answers with their checks,
// or reads a range of rows of a home's ledger itself, columns and bodies, and answers with the
// range's checks (range.ts: small, the leaves in one transferred buffer and folded into
// subtrees), so the main thread neither reads nor copies entry bodies, nor hashes per entry.
import { createPublicKey } from 'node:crypto';
import { parentPort, workerData } from 'node:worker_threads';
import { checkEntryLine } from './check-entry.js';
import { checkRange } from './range.js';
import { openLedgerSnapshot } from '../../store/sqlite/store.js';
import type { LedgerSnapshot } from '../../store/ports.js';

const { publicKeyPem, withEntries, ledgerDb } = workerData as { publicKeyPem: string; withEntries: boolean; ledgerDb?: string };
const key = createPublicKey(publicKeyPem);
// Its own read snapshot, opened after the main thread's: the rows of a range it is given (by
// key and count, from the main thread's snapshot) are the same in both, since entries are only
// ever appended; the main thread checks the count that comes back.
let snap: LedgerSnapshot | null = null;

parentPort!.on('message', (m: { id: number; lines?: string[]; range?: { fromSeq: number; count: number; start: number }; epochOffset?: number }) => {
  if (m.lines) return parentPort!.postMessage({ id: m.id, results: m.lines.map((l) => checkEntryLine(l, key, withEntries)) });
  const { fromSeq, count, start } = m.range!;
  snap ??= openLedgerSnapshot(ledgerDb!);
  const r = checkRange(snap.rows!(fromSeq, count), start, key, withEntries, m.epochOffset);
  parentPort!.postMessage({ id: m.id, results: r }, [r.leaves.buffer as ArrayBuffer]);
});
