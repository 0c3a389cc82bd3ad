// What enforce would have refused while the gate ran in shadow mode (the ledger's would_refuse
// decisions), by manifest, tool and reason, with the manifest lines a reviewer changes to get
// there: the way from shadow to enforce. Tools are named as the ledger names them (an undeclared
// tool only by digest: its name was the model's text); no argument value is ever read.
import type { LedgerEntry } from '../ledger/entry.js';

export interface ShadowGroup {
  manifest: string | null; // the manifest file whose digest the decisions name, if found
  manifest_digest: string;
  tool: string | null;
  tool_digest: string | null;
  reason: string;
  calls: number;
  first: string;
  last: string;
  /** 1-based lines of the manifest to look at, and what to change. */
  lines: [number, number] | null;
  change: string;
}

/** The block of tool NAME under `tools:` in a drafted (or hand-written block-style) manifest. */
export function toolLines(text: string, tool: string): [number, number] | null {
  const lines = text.split('\n');
  const head = lines.findIndex((l) => /^tools:\s*(#.*)?$/.test(l));
  if (head < 0) return null;
  const keyRe = /^ {2}("(?:[^"\\]|\\.)*"|[^\s:#][^:#]*):\s*(#.*)?$/;
  for (let i = head + 1; i < lines.length && !/^\S/.test(lines[i]); i++) {
    const m = keyRe.exec(lines[i]);
    if (!m) continue;
    const name = m[1].startsWith('"') ? (JSON.parse(m[1]) as string) : m[1].trim();
    if (name !== tool) continue;
    let end = i + 1;
    while (end < lines.length && (/^ {3,}/.test(lines[end]) || lines[end].trim() === '')) end++;
    while (end > i + 1 && lines[end - 1].trim() === '') end--;
    return [i + 1, end];
  }
  return null;
}

function advice(reason: string, tool: string | null): string {
  const t = tool ?? 'this tool';
  switch (reason) {
    case 'undeclared_tool':
      return 'not in the manifest: declare it under tools: (and permit it in the policy) if the agent should call it';
    case 'undeclared_argument':
      return `${t} was called with an argument its arguments: block does not declare: declare it if the calls are meant`;
    case 'argument_invalid':
      return `an argument of ${t} broke its rule (type, enum, pattern, length or bound): widen the rule if the calls are meant`;
    case 'policy_denied':
      return `the policy does not permit ${t} here: add or widen its permit in policy.cedar`;
    case 'approval_required':
    case 'approval_invalid':
      return `${t} requires a signed approval (approval: required): approve such calls, or drop the requirement`;
    case 'scope_mismatch':
      return `${t}'s calls fall outside the task context's scope: widen context.json or the tool's scope rules`;
    default:
      return `refused as ${reason}: see the refusal table (README)`;
  }
}

export function shadowReport(entries: Iterable<LedgerEntry>, manifests: Map<string, { path: string; text: string }>, sinceIso?: string): ShadowGroup[] {
  const groups = new Map<string, ShadowGroup>();
  for (const e of entries) {
    if (e.kind !== 'decision' || e.outcome !== 'would_refuse') continue;
    if (sinceIso !== undefined && e.ts < sinceIso) continue;
    const d = e as LedgerEntry & { tool?: string; tool_digest?: string; reason?: string; manifest_digest: string };
    const reason = d.reason ?? 'unknown';
    const key = JSON.stringify([d.manifest_digest, d.tool ?? null, d.tool_digest ?? null, reason]);
    let g = groups.get(key);
    if (!g) {
      const m = manifests.get(d.manifest_digest);
      const toolsAt = m ? m.text.split('\n').findIndex((l) => /^tools:/.test(l)) + 1 : 0;
      const lines = m && d.tool ? toolLines(m.text, d.tool) : toolsAt > 0 ? ([toolsAt, toolsAt] as [number, number]) : null;
      g = { manifest: m?.path ?? null, manifest_digest: d.manifest_digest, tool: d.tool ?? null, tool_digest: d.tool_digest ?? null, reason, calls: 0, first: e.ts, last: e.ts, lines, change: advice(reason, d.tool ?? null) };
      groups.set(key, g);
    }
    g.calls++;
    if (e.ts < g.first) g.first = e.ts;
    if (e.ts > g.last) g.last = e.ts;
  }
  return [...groups.values()].sort((a, b) => b.calls - a.calls || (a.tool ?? '').localeCompare(b.tool ?? '') || a.reason.localeCompare(b.reason));
}
