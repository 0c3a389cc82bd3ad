// Everything a check may read, gathered for one decision inside the decision's transaction.
import type { LoadedManifest } from '../contract/manifest.js';
import type { TaskContext } from '../contract/context.js';
import type { ToolDecl } from '../contract/manifest-types.js';
import type { Call } from '../core/call.js';
import type { Digest } from '../core/digest.js';
import type { Annotations } from './verdict.js';
import type { GateServices } from './services.js';

export interface Facts {
  manifest: LoadedManifest;
  context: TaskContext;
  /** The declared tool; checks after `contract` may rely on it. */
  tool: ToolDecl;
  call: Call;
  fingerprint: Digest;
  /** Current session label (flow). */
  sessionLabel: string;
  now: number;
  services: GateServices;
  notes: Annotations;
}
