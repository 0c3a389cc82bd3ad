// `cloakpipe ledger export`: one self-contained JSONL file an auditor can verify with nothing
// else (verify --ledger). Line 1 is the header (format, version, the gate public key, counts);
// then every entry in seq order, exactly as stored; then every anchor (StoredAnchor JSON). Read
// in one snapshot and written as every --out file is (openOutput): never a torn export. Entries
// and anchors are streamed, a small batch at a time: a chain's anchors (kilobytes each, two an epoch)
// outgrow the heap long before its entries do.
import { openOutput } from '../util/out/index.js';
import type { KeyObject } from 'node:crypto';
import type { LedgerSnapshot } from '../store/ports.js';
import { keyIdOf } from '../core/signer.js';
import { parseAnchors } from './epoch-anchors.js';

export const EXPORT_FORMAT = 'cloakpipe-ledger';
export const EXPORT_VERSION = 1;

export interface ExportHeader {
  format: typeof EXPORT_FORMAT;
  version: typeof EXPORT_VERSION;
  /** The gate public key (SPKI PEM) as the exporting home holds it: informative, not a trust root. */
  public_key: string;
  key_id: string;
  /** The gate's name, for a chain exported from a fleet's shared store. */
  gate_id?: string;
  entries: number;
  anchors: number;
  exported_at: string;
}

/**
 * Writes `snap` (closed afterwards by the caller) to `outPath`; `gateId` names a fleet gate's
 * chain. Yields to the event loop between batches, so that a signal's handler can take back an
 * export cut short (openOutput); resolves once the export has left this process.
 */
export async function exportLedger(snap: LedgerSnapshot, publicKey: KeyObject, outPath: string, gateId?: string): Promise<{ entries: number; anchors: number }> {
  const out = openOutput(outPath);
  let done = false;
  try {
    const entries = snap.total;
    // The header's count by SQL: reading every token only to count them doubled the export's
    // garbage, in one loop that never let the collector's tasks run (out of heap under 16 MiB).
    const anchors = snap.anchorCount();
    const header: ExportHeader = {
      format: EXPORT_FORMAT,
      version: EXPORT_VERSION,
      public_key: publicKey.export({ type: 'spki', format: 'pem' }) as string,
      key_id: keyIdOf(publicKey),
      ...(gateId !== undefined ? { gate_id: gateId } : {}),
      entries,
      anchors,
      exported_at: new Date().toISOString(),
    };
    out.write(JSON.stringify(header) + '\n');
    const n = await writeLines(out, snap.bodies());
    const m = await writeLines(out, map(parseAnchors(snap.anchors()), (a) => JSON.stringify(a)));
    if (n !== entries || m !== anchors) throw new Error('ledger changed during export');
    out.commit();
    done = true;
    await out.delivered();
    return { entries, anchors };
  } finally {
    if (!done) out.abort();
  }
}

/**
 * Writes `lines` a batch (1024 lines, or 64 KiB) at a time, yielding to the event loop between
 * batches; returns how many. Small batches: between them the collector's tasks run, and with
 * 1 MiB ones an export of large anchors under a 16 MiB heap ran out of it one run in three.
 */
async function writeLines(out: { write(s: string): void; room(): Promise<void> }, lines: Iterable<string>): Promise<number> {
  let buf: string[] = [];
  let size = 0;
  let n = 0;
  for (const line of lines) {
    buf.push(line);
    size += line.length;
    n++;
    if (buf.length >= 1024 || size >= 1 << 16) {
      out.write(buf.join('\n') + '\n');
      buf = [];
      size = 0;
      await new Promise((res) => setImmediate(res));
      await out.room(); // a paused reader: wait, rather than hold the rest of the ledger
    }
  }
  if (buf.length) out.write(buf.join('\n') + '\n');
  return n;
}

function* map<T, U>(xs: Iterable<T>, f: (x: T) => U): Iterable<U> {
  for (const x of xs) yield f(x);
}
