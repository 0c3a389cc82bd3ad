// The gate's pin session over the attached operations database.
import type { Db } from '../store/sqlite.js';
import type { LoadedManifest } from '../contract/manifest.js';
import { PinStore } from './store.js';
import { PinSession } from './session.js';

export function openPins(db: Db, m: LoadedManifest, schema = 'ops'): PinSession {
  PinStore.initSchema(db, schema); // homes made before pins existed gain the table
  const declared = (tool: string) => Object.prototype.hasOwnProperty.call(m.manifest.tools, tool);
  return new PinSession(new PinStore(db, schema), m.manifest.release, declared, m.manifest.pins ?? {});
}
