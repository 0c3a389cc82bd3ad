// One scripted MCP session, run with the official SDK client straight to a real server and then
// through the real gate to a fresh instance of the same server, compared call by call. A step
// the manifest means to refuse is sent only through the gate (the server would run it: that is
// the point), and what follows shows it never arrived.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { cloakpipe, makeHome, PERMIT_ALL, writeFiles } from './cli.js';
import { startGate, type RunningGate } from './gate.js';

export type Outcome = { ok: true; value: unknown; progress: number } | { ok: false; code: number; message: string; data: any };

export interface Step {
  label: string;
  /** The request; pass `onprogress` where the call should ask for progress notifications. */
  run: (c: Client, onprogress: () => void) => Promise<unknown>;
  /** The manifest refuses this call with this reason; it is not sent straight to the server. */
  refusedBy?: string;
  /** What the gate must answer, given the server's own answer (default: the same). */
  expectThroughGate?: (direct: unknown) => unknown;
  /** Parts of an answer that differ between two runs of any server (times), made equal. */
  normalize?: (v: unknown) => unknown;
  /** A known gate bug owned elsewhere: the step's test is marked todo with this reason. */
  todo?: string;
}

export async function runSession(client: Client, steps: Step[], throughGate: boolean): Promise<(Outcome | null)[]> {
  // Progress is counted as it arrives on the transport, in order with the answer: the SDK's own
  // onprogress callback can lose a notification that shares a read with the answer.
  let progress = 0;
  const transport = client.transport!;
  const deliver = transport.onmessage!;
  transport.onmessage = (m, extra) => {
    if ('method' in m && m.method === 'notifications/progress') progress++;
    deliver.call(transport, m, extra);
  };
  const out: (Outcome | null)[] = [];
  for (const s of steps) {
    if (s.refusedBy !== undefined && !throughGate) {
      out.push(null);
      continue;
    }
    progress = 0;
    try {
      const value = await s.run(client, () => undefined);
      out.push({ ok: true, value, progress });
    } catch (e) {
      if (!(e instanceof McpError)) throw e;
      out.push({ ok: false, code: e.code, message: e.message, data: e.data });
    }
  }
  return out;
}

/** JSON round trip: the values as a host reads them off the wire (no undefined, no prototypes). */
const plain = (v: unknown): unknown => (v === undefined ? undefined : JSON.parse(JSON.stringify(v)));

/**
 * Registers one test per step: the gate's answer equals the server's (after `expectThroughGate`
 * and `normalize`), or, for a step the manifest refuses, the gate refused it with that reason.
 */
export function defineSessionTests(server: string, steps: Step[], results: () => { direct: (Outcome | null)[]; gated: (Outcome | null)[] }): void {
  steps.forEach((s, k) => {
    const name = `${server} #${k + 1} ${s.label}: ${s.refusedBy ? `refused ${s.refusedBy}` : 'same answer through the gate'}`;
    test(name, s.todo ? { todo: s.todo } : {}, () => {
      const { direct, gated } = results();
      const g = gated[k]!;
      assert.ok(g !== null);
      if (s.refusedBy !== undefined) {
        assert.ok(!g.ok, `${s.label} was answered ${JSON.stringify(g)}`);
        assert.equal(g.code, -32001);
        assert.equal(g.data?.reason, s.refusedBy);
        assert.ok(g.message.includes(`cloakpipe refused: ${s.refusedBy}`), g.message);
        assert.equal(typeof g.data?.entry, 'number', 'the refusal is a ledger entry');
        return;
      }
      const d = direct[k]!;
      const norm = s.normalize ?? ((v: unknown) => v);
      if (d.ok) {
        assert.ok(g.ok, `the server answered, the gate said ${JSON.stringify(g)}`);
        const want = s.expectThroughGate ? s.expectThroughGate(plain(d.value)) : plain(d.value);
        assert.deepStrictEqual(norm(plain(g.value)), norm(want));
        assert.equal(g.progress, d.progress, 'the same progress notifications');
      } else {
        // The server's own JSON-RPC error passes through unchanged.
        assert.ok(!g.ok, `the server refused (${d.message}), the gate answered`);
        assert.deepStrictEqual({ code: g.code, message: g.message, data: plain(g.data) }, { code: d.code, message: d.message, data: plain(d.data) });
      }
    });
  });
}

/** A tools/list answer with only the tools a manifest declares, in the server's order. */
export function onlyDeclared(declared: string[]): (direct: unknown) => unknown {
  return (d) => {
    const list = d as { tools: { name: string }[] };
    return { ...list, tools: list.tools.filter((t) => declared.includes(t.name)) };
  };
}

/** The session straight to a server over stdio (a fresh instance), closed after. */
export async function runStraight(command: string[], steps: Step[], env: Record<string, string> = {}): Promise<(Outcome | null)[]> {
  const d = new Client({ name: 'direct', version: '1' });
  await d.connect(new StdioClientTransport({ command: command[0], args: command.slice(1), env: { ...(process.env as Record<string, string>), ...env }, stderr: 'ignore' }));
  try {
    return await runSession(d, steps, false);
  } finally {
    await d.close();
  }
}

export interface PairedRun {
  direct: (Outcome | null)[];
  gated: (Outcome | null)[];
  home: string;
}

/**
 * The whole comparison for one server: the session straight to it, then through `mcp-proxy` (a
 * fresh home, `manifest`, `policy` or permit-all) to a fresh instance; `reset` runs before each (the state
 * both runs must start from). Registers one test per step and one for the ledger: it verifies,
 * with one refusal entry per refused step and no other. Returns the runs, for further tests.
 */
export function pairedSession(server: string, steps: Step[], o: { manifest: string; policy?: string; command: string[]; env?: Record<string, string>; reset?: () => void }): () => PairedRun {
  const run: PairedRun = { direct: [], gated: [], home: '' };
  let gate: RunningGate | undefined;
  before(async () => {
    o.reset?.();
    run.direct = await runStraight(o.command, steps, o.env);
    o.reset?.();
    const f = writeFiles({ 'm.yaml': o.manifest, 'p.cedar': o.policy ?? PERMIT_ALL });
    run.home = makeHome();
    gate = await startGate({ home: run.home, manifest: f['m.yaml'], policy: f['p.cedar'], upstream: o.command, env: o.env });
    run.gated = await runSession(gate.client, steps, true);
  });
  after(async () => {
    await gate?.close();
  });
  defineSessionTests(server, steps, () => run);
  test(`${server}: the session left a ledger that verifies, with one refusal entry per refused call and no other`, () => {
    const v = cloakpipe(['verify', '--home', run.home]);
    assert.equal(v.status, 0, v.stderr);
    const entries = cloakpipe(['ledger', 'show', '--home', run.home, '--json']).stdout.trim().split('\n').map((l) => JSON.parse(l));
    const refusals = entries.filter((e) => e.kind === 'decision' && e.outcome === 'refuse').map((e) => e.reason);
    assert.deepEqual(refusals, steps.filter((s) => s.refusedBy).map((s) => s.refusedBy));
  });
  return () => run;
}
