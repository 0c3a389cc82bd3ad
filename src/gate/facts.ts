// Everything a check may read, gathered for one decision inside the decision's transaction.
import type { LoadedManifest } from '../contract/manifest.js';
import type { TaskContext } from '../contract/context.js';
import type { ToolDecl } from '../contract/manifest-types.js';
import type { Call } from '../core/call.js';
import type { Digest } from '../core/digest.js';
import type { Annotations } from './verdict.js';
import type { GateServices, PolicyService } from './services.js';
import type { GateSession } from './session.js';

export interface Facts {
  manifest: LoadedManifest;
  /** The policy in force (reloaded with the manifest). */
  policy: PolicyService;
  context: TaskContext;
  /** The declared tool; checks after `contract` may rely on it. */
  tool: ToolDecl;
  call: Call;
  fingerprint: Digest;
  /** The session the call belongs to (flow label, pins view). */
  session: GateSession;
  /** The session label in force for this decision (the flow check may raise it). */
  sessionLabel: string;
  now: number;
  services: GateServices;
  notes: Annotations;
}
