// Policy end to end: a gate home, manifest, policy and task context files, and the real gate
// binary in front of the support-desk server (support-desk-server.ts), whose record of calls is
// the witness of what reached a tool.
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cloakpipe, helperScript, makeHome, tempDir, writeFiles } from './cli.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { after } from 'node:test';
import { gateArgs } from './gate-client.js';
import { call, type Outcome, type RunningGate } from './recording-gate.js';

export { call, type Outcome, type RunningGate };

export const DESK_SERVER = helperScript('support-desk-server.js');

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

export interface Desk {
  home: string;
  dir: string;
  manifest: string;
  policy: string;
  record: string;
  /** Task context files by name. */
  contexts: Record<string, string>;
}

export function desk(o: { policy: string; contexts?: Record<string, object>; manifest?: string; home?: string }): Desk {
  const files = writeFiles({ 'manifest.yaml': o.manifest ?? DESK_MANIFEST, 'p.cedar': o.policy });
  const dir = tempDir('cloakpipe-desk-');
  const contexts: Record<string, string> = {};
  for (const [name, doc] of Object.entries(o.contexts ?? {})) {
    contexts[name] = join(dir, `${name}.json`);
    writeFileSync(contexts[name], JSON.stringify(doc));
  }
  return { home: o.home ?? makeHome(), dir, manifest: files['manifest.yaml'], policy: files['p.cedar'], record: join(dir, 'record.jsonl'), contexts };
}

// A failing test must not leave gates behind to keep the test process alive.
const running = new Set<() => Promise<void>>();
after(async () => {
  await Promise.allSettled([...running].map((close) => close()));
});

/** Start a gate on the desk's home with one of its task contexts. A gate that does not come up
 *  fails the test with what it wrote to stderr. */
export async function openDesk(d: Desk, context?: string, flags: string[] = []): Promise<RunningGate> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: gateArgs({
      home: d.home,
      manifest: d.manifest,
      policy: d.policy,
      context: context === undefined ? undefined : d.contexts[context],
      flags,
      upstream: [process.execPath, DESK_SERVER],
    }),
    stderr: 'pipe',
    env: { ...(process.env as Record<string, string>), RECORD_FILE: d.record },
  });
  let err = '';
  transport.stderr?.on('data', (b: Buffer) => (err += b.toString()));
  const client = new Client({ name: 'cloakpipe-policy-host', version: '1.0.0' });
  try {
    await client.connect(transport, { timeout: 120_000 });
  } catch (e) {
    await new Promise((r) => setTimeout(r, 200)); // the rest of stderr
    await client.close().catch(() => undefined);
    throw new Error(`the gate did not start: ${(e as Error).message}\n${err}`);
  }
  const pid = transport.pid ?? -1;
  // Closing returns once the gate process is gone, so a gate started next on the same home
  // really is a restart.
  const close = async () => {
    running.delete(close);
    await client.close().catch(() => undefined);
    for (const end = Date.now() + 30_000; pid > 0 && alive(pid) && Date.now() < end; ) await new Promise((r) => setTimeout(r, 25));
  };
  running.add(close);
  return { client, pid, stderr: () => err, close };
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Replace a task context file the way an orchestrator should: write aside, then rename. */
export function rewriteContext(d: Desk, name: string, doc: object): void {
  const tmp = `${d.contexts[name]}.tmp`;
  writeFileSync(tmp, JSON.stringify(doc));
  renameSync(tmp, d.contexts[name]);
}

/** What reached the upstream's tools, in order. */
export function arrived(d: Desk, tool?: string): { tool: string; arguments: Record<string, unknown>; pid: number }[] {
  if (!existsSync(d.record)) return [];
  const all = readFileSync(d.record, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
  return tool ? all.filter((r) => r.tool === tool) : all;
}

export function ledgerOf(home: string): Record<string, any>[] {
  const r = cloakpipe(['ledger', 'show', '--json', '--home', home]);
  if (r.status !== 0) throw new Error(`ledger show failed: ${r.stderr}`);
  return r.stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l));
}

export const decisions = (home: string) => ledgerOf(home).filter((e) => e.kind === 'decision');

/** Assert-friendly view of a refusal: reason and detail, or 'ok'. */
export function summary(o: Outcome): string {
  return o.ok ? 'ok' : `${o.reason}: ${o.detail}`;
}
