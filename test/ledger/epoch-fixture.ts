// Building real signed ledgers for epoch and verify tests: a temp ledger.db with entries written
// by the production Ledger, epochs sealed by the production code.
import { createPrivateKey, generateKeyPairSync, type KeyObject } from 'node:crypto';
import { join } from 'node:path';
import { Ledger } from '../../src/ledger/ledger.js';
import { loadGateKey } from '../../src/ledger/keys.js';
import { FileSigner } from '../../src/keys/file.js';
import { signEntry, entryHash, type Entry } from '../../src/ledger/entry.js';
import { canonicalize } from '../../src/core/canonical.js';
import type { Db } from '../../src/store/sqlite/db.js';
import type { AnchorsPort } from '../../src/store/ports.js';
import { ledgerDb } from '../store/helpers.js';
import { tempDir } from '../helpers/cli.js';

export function gateKey(): FileSigner {
  const { privateKey } = generateKeyPairSync('ed25519');
  const pk = createPrivateKey(privateKey.export({ type: 'pkcs8', format: 'pem' }));
  return new FileSigner(pk);
}

export interface Fixture {
  path: string;
  db: Db;
  anchors: AnchorsPort;
  key: FileSigner;
  ledger: Ledger;
  add(n: number): void;
  now: { t: number };
}

/** A new ledger with a new key; or with `home`, that home's ledger and gate key (init made them). */
export function fixture(opts: { start?: number; home?: string } = {}): Fixture {
  const path = opts.home === undefined ? join(tempDir('cp-verify-'), 'ledger.db') : join(opts.home, 'ledger.db');
  const { db, ledger: port, anchors } = ledgerDb(path, { create: opts.home === undefined });
  const key = opts.home === undefined ? gateKey() : loadGateKey(join(opts.home, 'gate.key'));
  const now = { t: opts.start ?? Date.now() - 60_000 };
  const ledger = new Ledger(port, key, () => now.t);
  return {
    path,
    db,
    anchors,
    key,
    ledger,
    now,
    add(n: number) {
      db.transaction(() => {
        for (let i = 0; i < n; i++) {
          now.t += 7;
          ledger.appendInTx({ kind: 'decision', outcome: 'allow', tool: 'echo', fingerprint: 'sha256:' + 'ab'.repeat(32), manifest_digest: 'sha256:' + 'cd'.repeat(32), policy_digest: 'sha256:' + 'ef'.repeat(32) });
        }
      })();
    },
  };
}

export function entryAt(db: Db, seq: number): Entry {
  const row = db.prepare('SELECT body FROM entries WHERE seq = ?').get(seq) as { body: string };
  return JSON.parse(row.body) as Entry;
}

/** Overwrites the row `seq` with `entry` (hash column kept consistent, as a careful forger would). */
export function putEntry(db: Db, rowSeq: number, entry: Entry): void {
  db.prepare('UPDATE entries SET body = ?, hash = ?, ts = ?, kind = ? WHERE seq = ?').run(canonicalize(entry), entryHash(entry), entry.ts, entry.kind, rowSeq);
}

/** Re-signs `entry` (without its sig) with `key`. */
export function resign(entry: Entry, key: KeyObject): Entry {
  const { sig: _sig, ...body } = entry;
  return signEntry(body, new FileSigner(key));
}

/** Re-signs and re-links entries from `seq` on (a key holder rewriting history). */
export function rechainFrom(db: Db, seq: number, key: KeyObject): void {
  const rows = db.prepare('SELECT seq FROM entries WHERE seq >= ? ORDER BY seq').all(seq) as { seq: number }[];
  for (const { seq: s } of rows) {
    const prev = entryHash(entryAt(db, s - 1));
    putEntry(db, s, resign({ ...entryAt(db, s), prev }, key));
  }
}
