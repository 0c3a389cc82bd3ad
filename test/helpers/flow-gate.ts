// Information flow end to end: a gate home, the flow manifest, a policy (permit-all unless
// told otherwise), a task context, and the real gate binary in front of the recording upstream's
// flow tools (upstream.ts, UPSTREAM_TOOLS=flow), driven
// by the SDK's Client. Optionally with an OpenTelemetry SDK preloaded (otel-preload.ts), the way
// an operator installs one, so the test can read the spans an exporter received.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fixtureFiles, OTEL_PRELOAD, type FixtureFiles } from './cli.js';
import { readRecord, recordingUpstream, replaceContext, startGate, type RunningGate } from './gate.js';

export const FLOW_MANIFEST = `version: 1
release: flow-e2e@1
labels: [public, internal, confidential, restricted]
tools:
  read_record: { effect: read, returns: confidential, accepts: restricted, arguments: { id: { type: string, max_len: 200 } } }
  echo: { effect: read, accepts: restricted, arguments: { text: { type: string, max_len: 2000 } } }
  post_public: { effect: write, accepts: public, arguments: { text: { type: string, max_len: 2000 } } }
  post_internal: { effect: write, accepts: internal, arguments: { text: { type: string, max_len: 2000 } } }
  post_confidential: { effect: write, accepts: confidential, arguments: { text: { type: string, max_len: 2000 } } }
  fetch_report: { effect: write, returns: confidential, accepts: restricted, operation_id: key, arguments: { key: { type: string, max_len: 64 } } }
  fail_rpc: { effect: read, accepts: restricted, arguments: { text: { type: string } } }
  fail_tool: { effect: read, accepts: restricted, arguments: { text: { type: string } } }
  malformed: { effect: read, accepts: restricted, arguments: { text: { type: string } } }
  noisy: { effect: read, accepts: restricted, arguments: { text: { type: string } } }
classify:
  - { label: restricted, pattern: "ACCT-[0-9]{8}" }
  - { label: internal, pattern: "(?i)internal use only" }
`;

export interface FlowSetup extends FixtureFiles {
  /** Where the preloaded OpenTelemetry SDK writes the spans it exported. */
  spans: string;
}

export function flowSetup(o: { context?: object; policy?: string; manifest?: string } = {}): FlowSetup {
  const f = fixtureFiles('cloakpipe-flow-', { manifest: o.manifest ?? FLOW_MANIFEST, policy: o.policy, context: o.context ?? { task: { id: 'T-flow' } } });
  return { ...f, spans: join(f.dir, 'spans.jsonl') };
}

/** Replace the task context as an orchestrator should: write aside, then rename. */
export function rewriteContext(s: FlowSetup, doc: object): void {
  replaceContext(s.context, doc);
}

export type FlowGate = RunningGate;

/** The gate in front of the flow tools, optionally with an OpenTelemetry SDK preloaded. */
export function startFlowGate(s: FlowSetup, o: { flags?: string[]; env?: Record<string, string>; otel?: boolean } = {}): Promise<FlowGate> {
  return startGate({
    ...s,
    flags: o.flags,
    ...recordingUpstream('flow', s.record, { CLOAKPIPE_TEST_SPANS: s.spans, ...(o.env ?? {}) }),
    node: o.otel ? OTEL_PRELOAD : [],
  });
}

export const records = (s: FlowSetup) => readRecord(s.record);

export function spansOf(s: FlowSetup): { name: string; attributes: Record<string, unknown>; status: { code: number; message?: string } }[] {
  if (!existsSync(s.spans)) return [];
  return readFileSync(s.spans, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
}
