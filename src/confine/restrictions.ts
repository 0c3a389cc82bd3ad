// Live restriction state of one confined session. Guards against: a control update that widens
// what was approved at start, a replayed (stale) update undoing a newer revocation, and an
// update whose meaning is unclear. Anything invalid or stale closes admission until a valid,
// newer revision arrives. Updates carry tool names only: they cannot touch labels or ceilings.
// The gate's admission check reads this state (gate/checks/admission.ts): every refusal it
// causes is a decision of the gate and a ledger entry.
import { parseStrict } from '../wire/strict-parse.js';
import { isJsonObject } from '../core/json.js';
import type { AdmissionService } from '../gate/services.js';

export type ControlReply = { ok: true; revision: number } | { ok: false; closed: true };

const MAX_REVISION = Number.MAX_SAFE_INTEGER;

export class Restrictions implements AdmissionService {
  revision = 0;
  closed = false;
  private allowed: Set<string>;
  private readonly approved: ReadonlySet<string>;

  constructor(approvedAtStart: Iterable<string>) {
    this.approved = new Set(approvedAtStart);
    this.allowed = new Set(this.approved);
  }

  admits(tool: string): { state: 'open' | 'revoked' | 'closed'; revision: number } {
    const state = this.closed ? 'closed' : this.allowed.has(tool) ? 'open' : 'revoked';
    return { state, revision: this.revision };
  }

  /** The tools allowed at the revision in force, sorted. */
  tools(): string[] {
    return [...this.allowed].sort();
  }

  /** Close admission without an update (an update that could not be recorded). */
  close(): void {
    this.closed = true;
  }

  /** Apply one update line (raw text from the socket). */
  apply(line: string): ControlReply {
    const u = parseUpdate(line);
    if (!u || u.revision <= this.revision || u.tools.some((t) => !this.approved.has(t))) {
      this.closed = true;
      return { ok: false, closed: true };
    }
    this.revision = u.revision;
    this.allowed = new Set(u.tools);
    this.closed = false;
    return { ok: true, revision: u.revision };
  }
}

export function parseUpdate(line: string): { revision: number; tools: string[] } | null {
  let v;
  try {
    v = parseStrict(line);
  } catch {
    return null;
  }
  if (!isJsonObject(v)) return null;
  const keys = Object.keys(v);
  if (keys.length !== 2 || !keys.includes('revision') || !keys.includes('tools')) return null;
  const { revision, tools } = v;
  if (typeof revision !== 'number' || !Number.isInteger(revision) || revision < 1 || revision > MAX_REVISION) return null;
  if (!Array.isArray(tools) || tools.some((t) => typeof t !== 'string')) return null;
  const names = tools as string[];
  if (new Set(names).size !== names.length) return null;
  return { revision, tools: names };
}
