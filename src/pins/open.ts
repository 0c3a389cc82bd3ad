// The gate's pin session over the store's pins.
import type { PinsPort } from '../store/ports.js';
import type { LoadedManifest } from '../contract/manifest.js';
import { PinSession } from './session.js';

export function openPins(port: PinsPort, m: LoadedManifest): PinSession {
  const declared = (tool: string) => Object.prototype.hasOwnProperty.call(m.manifest.tools, tool);
  return new PinSession(port, m.manifest.release, declared, m.manifest.pins ?? {});
}
