// Where verify reads a ledger from, streaming: a gate home (ledger.db, read in one snapshot so a
// running gate cannot tear it) or an export file (header line, N entry lines, anchor lines).
import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { Readable } from 'node:stream';
import { openLedgerSnapshot } from '../../store/sqlite/store.js';
import type { LedgerSnapshot } from '../../store/ports.js';
import { parseAnchors, type StoredAnchor } from '../epoch-anchors.js';
import { EXPORT_FORMAT, EXPORT_VERSION, type ExportHeader } from '../export.js';
import { fail } from './reasons.js';
import { unknownHeaderMember } from './members.js';
import type { LedgerRows } from './pool.js';
// Anchor lines and the header are evidence: read strictly (duplicate keys refused), see evidence-json.ts.
import { readEvidenceJson } from '../anchors/evidence-json.js';

export type AnchorRecord = StoredAnchor | { epoch: number; kind: string; malformed: true };

export interface OpenedSource {
  total: number;
  /** The gate key the export names (PEM), for --ledger; undefined for a home. */
  embeddedKeyPem?: string;
  entries(): AsyncIterable<string>;
  /** A home only: its database and row keys, for workers that read their own ranges. */
  rows?: LedgerRows & { ledgerDb: string };
  /** Only after entries() is exhausted. */
  anchors(): AsyncIterable<AnchorRecord>;
  /** A database only (an export has no columns): the first row whose unsigned columns differ from its body. */
  editedRow?(): { seq: number; columns: string[] } | null;
  close(): void;
}

export function openHomeSource(ledgerPath: string): OpenedSource {
  return openSnapshotSource(openLedgerSnapshot(ledgerPath), ledgerPath); // one read snapshot for entries and anchors
}

/** A snapshot already taken (a gate's chain in a shared store); closed with the source.
 *  `ledgerDb`: the SQLite file it was taken from, which verify's workers may read themselves. */
export function openSnapshotSource(snap: LedgerSnapshot, ledgerDb?: string): OpenedSource {
  return {
    total: snap.total,
    async *entries() {
      yield* snap.bodies();
    },
    rows: snap.keys && snap.span && ledgerDb !== undefined ? { ledgerDb, keys: () => snap.keys!(), span: () => snap.span!() } : undefined,
    async *anchors() {
      yield* parseAnchors(snap.anchors());
    },
    ...(snap.editedRow ? { editedRow: () => snap.editedRow!() } : {}),
    close: () => snap.close(),
  };
}

/**
 * The file's text, refused at the first byte sequence that is not UTF-8. A lenient decoder reads
 * any such bytes as U+FFFD: an entry holding U+FFFD (in a tool name) could be written as other
 * bytes, which other readers read otherwise, and still verify. The BOM is kept (and refused).
 */
async function* utf8Text(bytes: AsyncIterable<Buffer>): AsyncGenerator<string> {
  const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
  try {
    for await (const chunk of bytes) yield decoder.decode(chunk, { stream: true });
    const rest = decoder.decode();
    if (rest !== '') yield rest;
  } catch (e) {
    if (e instanceof TypeError) fail('source_invalid', null, 'export is not UTF-8');
    throw e;
  }
}

export async function openExportSource(path: string): Promise<OpenedSource> {
  const stream = createReadStream(path);
  const text = Readable.from(utf8Text(stream));
  const rl = createInterface({ input: text, crlfDelay: Infinity });
  const it = rl[Symbol.asyncIterator]();
  const close = () => {
    rl.close();
    text.destroy();
    stream.destroy();
  };
  let header: ExportHeader;
  try {
    const first = await it.next();
    if (first.done) fail('source_invalid', null, 'export is empty');
    try {
      header = readEvidenceJson(first.value, 'export header') as unknown as ExportHeader;
    } catch {
      fail('source_invalid', null, 'export header is not strict JSON');
    }
    if (header?.format !== EXPORT_FORMAT || header.version !== EXPORT_VERSION) fail('source_invalid', null, 'not a cloakpipe ledger export (version 1)');
    if (!Number.isSafeInteger(header.entries) || header.entries < 0 || !Number.isSafeInteger(header.anchors) || header.anchors < 0)
      fail('source_invalid', null, 'export header lacks entry and anchor counts');
    if (typeof header.public_key !== 'string') fail('source_invalid', null, 'export header lacks the gate public key');
    const extra = unknownHeaderMember(header);
    if (extra !== null) fail('source_invalid', null, `export header carries ${extra}, which no check reads`);
  } catch (e) {
    close();
    throw e;
  }
  const h = header;
  return {
    total: h.entries,
    embeddedKeyPem: h.public_key,
    async *entries() {
      for (let i = 0; i < h.entries; i++) {
        const r = await it.next();
        if (r.done) fail('source_invalid', null, `export ends after ${i} of ${h.entries} entries`);
        yield r.value;
      }
    },
    async *anchors() {
      let n = 0;
      for (let r = await it.next(); !r.done; r = await it.next()) {
        if (r.value === '') continue;
        n++;
        let a: AnchorRecord;
        try {
          a = readEvidenceJson(r.value, 'anchor line') as unknown as AnchorRecord;
        } catch {
          fail('source_invalid', null, `export anchor line ${n} is not strict JSON (a duplicate key is refused)`);
        }
        if (!a || typeof a !== 'object' || !Number.isSafeInteger(a.epoch)) fail('source_invalid', null, `export anchor line ${n} names no epoch`);
        yield a;
      }
      if (n !== h.anchors) fail('source_invalid', null, `export holds ${n} anchors, its header says ${h.anchors}`);
    },
    close,
  };
}
