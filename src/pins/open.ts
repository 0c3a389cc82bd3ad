// The pin store over the attached operations database; each gate session views it (session.ts).
import type { Db } from '../store/sqlite.js';
import { PinStore } from './store.js';

export function openPinStore(db: Db, schema = 'ops'): PinStore {
  PinStore.initSchema(db, schema); // homes made before pins existed gain the table
  return new PinStore(db, schema);
}
