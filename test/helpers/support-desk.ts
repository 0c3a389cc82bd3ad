// Policy end to end: a gate home, manifest, policy and task context files, and the real gate
// binary in front of the recording upstream's support desk (upstream.ts, UPSTREAM_TOOLS=desk), whose record of calls is
// the witness of what reached a tool.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fixtureFiles, type FixtureFiles } from './cli.js';
import { call, decisions, ledgerOf, readRecord, recordingUpstream, replaceContext, startGate, summary, type Outcome, type RunningGate } from './gate.js';

export { call, decisions, ledgerOf, summary, type Outcome, type RunningGate };

/** The support desk's contract, without approvals (they are not under test here). */
export const DESK_MANIFEST = `version: 1
release: support-desk-e2e@1
labels: [public, internal, confidential]
tools:
  lookup_customer:
    effect: read
    arguments:
      customer_id: { type: string, pattern: "^C[0-9]{6}$", required: true }
  list_orders:
    effect: read
    arguments:
      customer_id: { type: string, pattern: "^C[0-9]{6}$", required: true }
      limit: { type: integer, minimum: 1 }
  send_email:
    effect: write
    operation_id: idempotency_key
    arguments:
      to: { type: string, required: true }
      subject: { type: string, max_len: 120 }
      body: { type: string, max_len: 4000 }
      idempotency_key: { type: string, max_len: 64 }
  issue_refund:
    effect: write
    operation_id: idempotency_key
    arguments:
      order_id: { type: string, pattern: "^O[0-9]{6}$", required: true }
      amount: { type: number, minimum: 0.01, maximum: 500, required: true }
      idempotency_key: { type: string, max_len: 64 }
`;

export interface Desk extends FixtureFiles {
  /** Task context files by name. */
  contexts: Record<string, string>;
}

export function desk(o: { policy: string; contexts?: Record<string, object>; manifest?: string; home?: string }): Desk {
  const f = fixtureFiles('cloakpipe-desk-', { manifest: o.manifest ?? DESK_MANIFEST, policy: o.policy, home: o.home });
  const contexts: Record<string, string> = {};
  for (const [name, doc] of Object.entries(o.contexts ?? {})) {
    contexts[name] = join(f.dir, `${name}.json`);
    writeFileSync(contexts[name], JSON.stringify(doc));
  }
  return { ...f, contexts };
}

/** Start a gate on the desk's home with one of its task contexts. */
export function openDesk(d: Desk, context?: string, flags: string[] = []): Promise<RunningGate> {
  return startGate({ ...d, context: context === undefined ? undefined : d.contexts[context], flags, ...recordingUpstream('desk', d.record) });
}

/** Replace a task context file the way an orchestrator should: write aside, then rename. */
export function rewriteContext(d: Desk, name: string, doc: object): void {
  replaceContext(d.contexts[name], doc);
}

/** What reached the upstream's tools, in order. */
export function arrived(d: Desk, tool?: string): { tool: string; arguments: Record<string, unknown>; pid: number }[] {
  return readRecord(d.record, tool);
}
