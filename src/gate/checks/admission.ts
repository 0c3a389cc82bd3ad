// Admission of a confined session (confinement.md, "Live restriction"). Guards against a call
// to a tool the operator revoked while the agent runs, and against every call while admission
// is closed: after an invalid or stale control update nobody knows what the operator meant, so
// nothing passes until a valid newer revision arrives. The state belongs to the session (the
// control socket changes it between calls); this check only reads it, and the decision entry
// names the revision in force.
import type { Facts } from '../facts.js';
import { PASS, refuse, type Verdict } from '../verdict.js';

export function checkAdmission(f: Facts): Verdict {
  const admission = f.services.admission;
  if (!admission) return PASS;
  const { state, revision } = admission.admits(f.call.tool);
  f.notes.fields.admission_revision = revision;
  if (state === 'closed') return refuse('admission_closed', 'admission is closed until a valid newer revision arrives');
  if (state === 'revoked') return refuse('revoked', 'the operator revoked this tool for this session');
  return PASS;
}
