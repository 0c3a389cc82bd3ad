// Every table of the operations database, created in one place so `init` and the gate agree.
// Owners add their schema initializers here.
import type { Db } from './sqlite.js';
import { OperationsStore } from '../operations/store.js';
import { PinStore } from '../pins/store.js';

export function initOperationsSchema(db: Db, schema: string) {
  db.exec(`CREATE TABLE IF NOT EXISTS ${schema}.meta (k TEXT PRIMARY KEY, v TEXT NOT NULL) STRICT`);
  OperationsStore.initSchema(db, schema); // operations, used_receipts
  PinStore.initSchema(db, schema); // tool-definition pins
}
