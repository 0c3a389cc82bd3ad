// A chain read from a fleet's shared store, copied page by page into a temporary SQLite ledger
// file and read from there. The read commands' snapshot is synchronous (verify, export, prove
// read it as they go); holding a whole chain in memory to serve it made `verify --store` of a
// busy fleet's chain run out of heap, where the same chain exported verifies in a bounded heap.
// On disk the copy is read as a home's ledger is: streamed, ranges for verify's workers.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDb } from './db.js';
import { ensureLedgerSchema } from './schema.js';
import { ledgerSnapshot } from './ledger.js';
import type { AnchorRow, LedgerSnapshot } from '../ports.js';
import { removedOnSignal } from '../../util/out/on-signal.js';

export interface ChainRow {
  seq: bigint;
  ts: string;
  kind: string;
  hash: string;
  body: string;
}

/** `pages` (the chain in seq order, a page at a time) and `anchors` (a page at a time), as a snapshot over their copy. */
export async function copiedChain(pages: AsyncIterable<ChainRow[]>, anchors: AsyncIterable<AnchorRow[]>): Promise<LedgerSnapshot> {
  // A signal (Ctrl-C, SIGTERM) while the copy is made or read removes it before the command
  // ends by that signal: a copy of a whole chain was left in the temporary folder for good.
  let dir = '';
  const removed = () => rmSync(dir, { recursive: true, force: true });
  const copy = removedOnSignal(() => {
    dir = mkdtempSync(join(tmpdir(), 'cloakpipe-chain-'));
    return { write: () => undefined, commit: removed, abort: removed };
  });
  const path = join(dir, 'ledger.db');
  try {
    const db = openDb(path, { create: true });
    try {
      ensureLedgerSchema(db);
      db.pragma('synchronous = OFF'); // a copy thrown away with the command: no durability needed
      const entry = db.prepare('INSERT INTO entries (seq, ts, kind, hash, body) VALUES (?, ?, ?, ?, ?)');
      const anchor = db.prepare('INSERT INTO anchors (epoch_seq, kind, data) VALUES (?, ?, ?)');
      const insertPage = db.transaction((rows: ChainRow[]) => {
        for (const r of rows) entry.run(r.seq, r.ts, r.kind, r.hash, r.body);
      });
      const insertAnchors = db.transaction((rows: AnchorRow[]) => {
        for (const a of rows) anchor.run(a.epoch, a.kind, a.data);
      });
      for await (const page of pages) insertPage(page);
      for await (const page of anchors) insertAnchors(page); // a page at a time, as entries: a token is kilobytes
    } finally {
      db.close();
    }
    const snap = ledgerSnapshot(openDb(path, { readOnly: true }));
    return {
      get total() {
        return snap.total;
      },
      bodies: (fromSeq, limit) => snap.bodies(fromSeq, limit),
      keys: () => snap.keys!(),
      span: () => snap.span!(),
      anchors: () => snap.anchors(),
      anchorCount: () => snap.anchorCount(),
      editedRow: () => snap.editedRow!(), // the store's columns, copied as they were
      close() {
        try {
          snap.close();
        } finally {
          copy.commit();
        }
      },
    };
  } catch (e) {
    copy.abort();
    throw e;
  }
}
