// Approvals and operations end to end: a gate home, an approver key pair, a manifest with write
// tools, and the real gate (gate.ts) in front of the recording upstream (upstream.ts) with the
// approvals tools.
import { join } from 'node:path';
import { cloakpipe, fixtureFiles, writeFiles, type FixtureFiles } from './cli.js';
import { call, ledgerOf, readRecord, recordingUpstream, startGate as start, waitFor, type Outcome, type RunningGate } from './gate.js';

export { call, waitFor, type Outcome, type RunningGate };

export const MANIFEST = `version: 1
release: approvals-e2e@1
tools:
  send_email:
    effect: write
    approval: required
    operation_id: idempotency_key
    arguments:
      to: { type: string, required: true }
      body: { type: string, max_len: 4000 }
      idempotency_key: { type: string, max_len: 64 }
  write_note:
    effect: write
    operation_id: key
    arguments:
      text: { type: string, required: true }
      key: { type: string, max_len: 64 }
  read_note:
    effect: read
    arguments:
      text: { type: string }
`;

export const CONTEXT = { task: { id: 'T-77' } };

export interface Setup extends FixtureFiles {
  approverKey: string;
  approverPub: string;
}

export function keygen(prefix: string): void {
  const r = cloakpipe(['keygen', '--out', prefix]);
  if (r.status !== 0) throw new Error(`keygen failed: ${r.stderr}`);
}

export function setup(): Setup {
  const f = fixtureFiles('cloakpipe-approvals-', { manifest: MANIFEST, context: CONTEXT });
  keygen(join(f.dir, 'approver'));
  return { ...f, approverKey: join(f.dir, 'approver.key'), approverPub: join(f.dir, 'approver.pub') };
}

/** The gate in front of the recording upstream; `mode` says how its calls behave (upstream.ts). */
export function startGate(
  s: Setup,
  o: { mode?: 'ok' | 'slow' | 'held' | 'hang' | 'die' | 'fail'; flags?: string[]; approvers?: string[]; delayMs?: number; releaseFile?: string; env?: Record<string, string> } = {},
): Promise<RunningGate> {
  const approvers = o.approvers ?? [s.approverPub];
  return start({
    ...s,
    flags: [...approvers.flatMap((p) => ['--approver-key', p]), ...(o.flags ?? [])],
    ...recordingUpstream('approvals', s.record, { RECORDER_MODE: o.mode ?? 'ok', RECORDER_DELAY_MS: String(o.delayMs ?? 300), RECORDER_RELEASE_FILE: o.releaseFile ?? '', ...o.env }),
  });
}

export const records = (s: Setup) => readRecord(s.record);

/** A write_note call of a crash test's stream, and what the host was shown before the crash, if anything. */
export interface Sent {
  key: string;
  seen?: Outcome;
}

/**
 * `lanes` concurrent streams of write_note calls, each under its own key `${prefix}-N`, until
 * `stop.now` or the gate dies under a call (the host then saw nothing of it). Every call is in
 * `sent` before it goes out.
 */
export async function writeStream(g: RunningGate, prefix: string, sent: Sent[], stop: { now: boolean }, o: { lanes: number; timeoutMs: number }): Promise<void> {
  let i = 0;
  const lane = async () => {
    while (!stop.now) {
      const s: Sent = { key: `${prefix}-${i++}` };
      sent.push(s);
      try {
        s.seen = await call(g, 'write_note', { text: `note ${s.key}`, key: s.key }, undefined, o.timeoutMs);
      } catch {
        return; // the gate died under the call: the host saw nothing
      }
    }
  };
  await Promise.all(Array.from({ length: o.lanes }, lane));
}

export const ledger = (s: Setup) => ledgerOf(s.home);

/** A call file for `cloakpipe fingerprint` / `approve --call`. */
export function callFile(s: Setup, tool: string, args: Record<string, unknown>, name = `call-${Math.random().toString(36).slice(2)}.json`): string {
  return writeFiles({ [name]: { tool, arguments: args } })[name];
}
