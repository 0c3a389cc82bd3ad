// Approvals and operations end to end: a gate home, an approver key pair, a manifest with write
// tools, and the real gate binary in front of the recording MCP server (recording-server.ts),
// driven by the SDK's Client as host.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { cloakpipe, helperScript, makeHome, PERMIT_ALL, tempDir, writeFiles } from './cli.js';
import { gateArgs } from './gate-client.js';

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

export interface Setup {
  home: string;
  manifest: string;
  policy: string;
  context: string;
  record: string;
  approverKey: string;
  approverPub: string;
  dir: string;
}

export function keygen(prefix: string): void {
  const r = cloakpipe(['keygen', '--out', prefix]);
  if (r.status !== 0) throw new Error(`keygen failed: ${r.stderr}`);
}

export function setup(): Setup {
  const home = makeHome();
  const files = writeFiles({ 'manifest.yaml': MANIFEST, 'policy.cedar': PERMIT_ALL, 'context.json': CONTEXT });
  const dir = tempDir('cloakpipe-approvals-');
  keygen(join(dir, 'approver'));
  return {
    home,
    manifest: files['manifest.yaml'],
    policy: files['policy.cedar'],
    context: files['context.json'],
    record: join(dir, 'record.jsonl'),
    approverKey: join(dir, 'approver.key'),
    approverPub: join(dir, 'approver.pub'),
    dir,
  };
}

export interface RunningGate {
  client: Client;
  pid: number;
  stderr(): string;
  close(): Promise<void>;
}

export async function startGate(
  s: Setup,
  o: { mode?: 'ok' | 'slow' | 'hang' | 'die' | 'fail'; flags?: string[]; approvers?: string[]; delayMs?: number } = {},
): Promise<RunningGate> {
  const approvers = o.approvers ?? [s.approverPub];
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: gateArgs({
      home: s.home,
      manifest: s.manifest,
      policy: s.policy,
      context: s.context,
      flags: [...approvers.flatMap((p) => ['--approver-key', p]), ...(o.flags ?? [])],
      upstream: [process.execPath, helperScript('recording-server.js')],
    }),
    stderr: 'pipe',
    env: {
      ...(process.env as Record<string, string>),
      RECORD_FILE: s.record,
      RECORDER_MODE: o.mode ?? 'ok',
      RECORDER_DELAY_MS: String(o.delayMs ?? 300),
    },
  });
  let err = '';
  transport.stderr?.on('data', (d: Buffer) => (err += d.toString()));
  const client = new Client({ name: 'cloakpipe-approvals-host', version: '1.0.0' });
  await client.connect(transport);
  return {
    client,
    pid: transport.pid!,
    stderr: () => err,
    close: () => client.close().catch(() => undefined),
  };
}

export type Outcome =
  | { ok: true; text: string; result: unknown }
  | { ok: false; code: number; reason: string; detail: string; data: Record<string, unknown>; message: string };

export async function call(
  g: RunningGate,
  name: string,
  args: Record<string, unknown>,
  meta?: Record<string, unknown>,
  timeoutMs = 20_000,
): Promise<Outcome> {
  try {
    const result = await g.client.callTool({ name, arguments: args, ...(meta ? { _meta: meta } : {}) }, undefined, { timeout: timeoutMs });
    const content = (result as { content?: { text?: string }[] }).content ?? [];
    return { ok: true, text: content.map((c) => c.text ?? '').join(''), result };
  } catch (e) {
    if (!(e instanceof McpError)) throw e;
    const data = (e.data ?? {}) as Record<string, unknown>;
    return { ok: false, code: e.code, reason: String(data.reason ?? ''), detail: String(data.detail ?? ''), data, message: e.message };
  }
}

export function records(s: Setup): { tool: string; arguments: Record<string, unknown> }[] {
  if (!existsSync(s.record)) return [];
  return readFileSync(s.record, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
}

export async function waitFor(cond: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 20));
  }
}

export function ledger(s: Setup): Record<string, unknown>[] {
  const r = cloakpipe(['ledger', 'show', '--json', '--home', s.home]);
  if (r.status !== 0) throw new Error(`ledger show failed: ${r.stderr}`);
  return r.stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l));
}

/** A call file for `cloakpipe fingerprint` / `approve --call`. */
export function callFile(s: Setup, tool: string, args: Record<string, unknown>, name = `call-${Math.random().toString(36).slice(2)}.json`): string {
  return writeFiles({ [name]: { tool, arguments: args } })[name];
}
