import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openSqliteStore } from '../../src/store/sqlite/store.js';
import type { Store } from '../../src/store/ports.js';

export function tempDir(prefix = 'cp-ops-'): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

/** A store like the gate's: ledger.db with operations.db attached, in a fresh directory. */
export function gateLikeStore(dir = tempDir()): { store: Store; dir: string } {
  const store = openSqliteStore({ ledger: join(dir, 'ledger.db'), operations: join(dir, 'operations.db') }, { create: true });
  return { store, dir };
}
