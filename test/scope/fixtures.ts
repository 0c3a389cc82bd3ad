// Fabricated gate histories for the scope report: real signed ledgers (the Ledger class and the
// home's generated key, in a home made by `cloakpipe init`) and real operations databases, with
// entries shaped as the gate writes them (src/gate/gate.ts). A fixed clock keeps them repeatable.
import type { DecisionOutcome } from '../../src/core/entries.js';
import type { Ledger } from '../../src/ledger/ledger.js';
import { Operations } from '../../src/operations/operations.js';
import { openHome, type OpenedHome } from '../../src/home/open.js';
import { operationDigest } from '../../src/operations/operation-id.js';
import { fingerprintOf } from '../../src/core/call.js';
import { resolveHome } from '../../src/store/home.js';
import { openDb } from '../../src/store/sqlite/db.js';
import { digestJson } from '../../src/core/digest.js';
import type { JsonObject, JsonValue } from '../../src/core/json.js';

export const POLICY_DIGEST = digestJson('fabricated policy');
export const CONTEXT_DIGEST = digestJson('fabricated context');

export interface Fabricated {
  seq: number;
  fingerprint: string;
  operation: string | null;
  result_digest: string | null;
}

export type ResultKind = 'ok' | 'error' | 'unknown' | 'none';

export class History {
  readonly ledger: Ledger;
  private readonly home: OpenedHome;
  private readonly ledgerPath: string;
  readonly ops: Operations;
  private t: number;
  mode: 'enforce' | 'shadow' = 'enforce';

  constructor(
    home: string,
    readonly manifestDigest: string,
    readonly task = 'T-1042',
    start = Date.parse('2026-11-20T09:00:00.000Z'),
  ) {
    const h = resolveHome(home);
    this.t = start;
    this.ledgerPath = h.ledger;
    this.home = openHome({ home, clock: () => (this.t += 1000) });
    this.ops = new Operations(this.home.store.operations, 'fabricated/1/00');
    this.ledger = this.home.ledger;
  }

  startup(mode: 'enforce' | 'shadow' = 'enforce') {
    this.mode = mode;
    return this.ledger.appendInTx({ kind: 'startup', mode, release: 'fabricated', manifest_digest: this.manifestDigest, policy_digest: POLICY_DIGEST, context_digest: CONTEXT_DIGEST, gate_key: 'sha256:fabricated', pid: 1, operations_recovered: 0 });
  }

  private decision(outcome: DecisionOutcome, tool: string, args: JsonObject, extra: JsonObject): { seq: number; fingerprint: string } {
    const fingerprint = fingerprintOf(tool, args, this.task);
    const e = this.ledger.appendInTx({
      kind: 'decision',
      outcome,
      tool,
      fingerprint,
      args_digest: digestJson(args),
      context_digest: CONTEXT_DIGEST,
      task: this.task,
      session_label: 'internal',
      agent: 'agent',
      manifest_digest: this.manifestDigest,
      policy_digest: POLICY_DIGEST,
      ...extra,
    });
    return { seq: e.seq, fingerprint };
  }

  /**
   * An allowed call and what followed. `operationId` makes it a write operation (begun in the
   * operations database, settled by `result`); `store: false` leaves the stored outcome out.
   */
  allow(tool: string, args: JsonObject, o: { operationId?: string; result?: ResultKind; value?: JsonValue; store?: boolean } = {}): Fabricated {
    const result = o.result ?? 'ok';
    const op = o.operationId;
    const opFields: JsonObject = op ? { operation: operationDigest(op), operation_id_source: 'argument', operation_state: 'pending', operation_attempt: 1 } : {};
    // Shadow mode records 'allow' too; the start-up entry's mode tells them apart.
    const { seq, fingerprint } = this.decision('allow', tool, args, opFields);
    const value: JsonValue = o.value ?? { content: [{ type: 'text', text: `done ${seq}` }] };
    const reply = result === 'error' ? { error: { code: -32000, message: 'upstream failed' } } : { result: value };
    if (op && o.store !== false) {
      this.ops.begin(op, fingerprint, tool, this.t);
      if (result === 'ok' || result === 'error') this.ops.settle(op, 1, reply, this.t);
      if (result === 'unknown') this.ops.fail(op, 1, 'timeout', this.t);
    }
    let result_digest: string | null = null;
    if (result === 'ok' || result === 'error') {
      result_digest = digestJson(reply.error ?? reply.result ?? null);
      this.ledger.appendInTx({ kind: 'result', outcome: result, fingerprint, decision: seq, result_digest });
    } else if (result === 'unknown') this.ledger.appendInTx({ kind: 'result', outcome: 'unknown', why: 'timeout', fingerprint, decision: seq });
    return { seq, fingerprint, operation: op ? operationDigest(op) : null, result_digest };
  }

  refuse(tool: string, args: JsonObject, reason = 'argument_invalid'): Fabricated {
    const outcome = this.mode === 'shadow' ? 'would_refuse' : 'refuse';
    const { seq, fingerprint } = this.decision(outcome, tool, args, { reason });
    if (outcome === 'would_refuse') {
      const result_digest = digestJson({ content: [] });
      this.ledger.appendInTx({ kind: 'result', outcome: 'ok', fingerprint, decision: seq, result_digest });
      return { seq, fingerprint, operation: null, result_digest };
    }
    return { seq, fingerprint, operation: null, result_digest: null };
  }

  /** Edit one stored entry's body in place: what verification must catch. */
  /** Puts `"field":value,` in front of entry `seq`'s stored body: the signed members stay. */
  prepend(seq: number, field: string, value: JsonValue) {
    const db = openDb(this.ledgerPath);
    const row = db.prepare('SELECT body FROM entries WHERE seq = ?').get(seq) as { body: string };
    db.prepare('UPDATE entries SET body = ? WHERE seq = ?').run(`{${JSON.stringify(field)}:${JSON.stringify(value)},${row.body.slice(1)}`, seq);
    db.close();
  }

  tamper(seq: number, field: string, value: JsonValue) {
    const db = openDb(this.ledgerPath);
    const row = db.prepare('SELECT body FROM entries WHERE seq = ?').get(seq) as { body: string };
    const body = JSON.parse(row.body);
    body[field] = value;
    db.prepare('UPDATE entries SET body = ? WHERE seq = ?').run(JSON.stringify(body), seq);
    db.close();
  }

  close() {
    this.home.close();
  }
}

/** A scope evidence file (cloakpipe-scope-evidence v1). */
export function scopeEvidence(records: object[], producer = 'fabricated test evidence') {
  return { format: 'cloakpipe-scope-evidence', version: 1, producer, records };
}

const sha = (s: string) => digestJson(s);

/**
 * A confinement suite evidence file in the shape test/confine/docker.test.ts writes today
 * ({kernel, docker, api, image, cases}), with counts chosen by the caller.
 */
export function suiteEvidence(o: { baselineNetwork?: number; mutationNetwork?: number | null; admissionRefused?: boolean; exportBaseline?: number; mutationExport?: number | null; deniedSinks?: string[] } = {}) {
  const obs = (count: number) => ({ count, digests: count ? [sha(`obs${count}`)] : [] });
  const run = (name: string, mode: string, c: { net?: number; exp?: number; logs?: number; post?: number }) => ({
    name,
    mode,
    canary_digest: sha(`canary-${name}`),
    summary: { allowed: 1, denied: 1, ended: 'stopped', reason: 'frame_keys', stderr_bytes: 12, container: 'c0ffee', removed: true, violations: [] },
    record: { calls: 1 + (c.post ?? 0), send_update: 1, post_public: c.post ?? 0 },
    tcp: { v4: obs(c.net ?? 0), v6: obs(0), bridge: obs(0) },
    dns: obs(0),
    export: obs(c.exp ?? 0),
    logs: { ...obs(c.logs ?? 0), readable: false },
    state: null,
    gone: true,
    container: 'c0ffee',
  });
  const admission = (name: string) => ({
    name,
    mode: 'baseline',
    canary_digest: sha(`canary-${name}`),
    summary: { allowed: 0, denied: 0, ended: o.admissionRefused === false ? 'stopped' : 'refused', violations: ['network_mode'] },
    record: { calls: 0 },
    tcp: {},
    dns: obs(0),
    export: obs(0),
    logs: obs(0),
    gone: true,
  });
  const cases: object[] = [
    run('baseline-1', 'baseline', { net: o.baselineNetwork ?? 0, exp: o.exportBaseline ?? 0 }),
    run('baseline-2', 'baseline', { exp: o.exportBaseline ?? 0 }),
    { name: 'killed-bridge', gone: true },
  ];
  if (o.mutationNetwork !== null) cases.push(admission('mutation-network-admission'), run('mutation-network-bypassed', 'baseline', { net: o.mutationNetwork ?? 3 }));
  if (o.mutationExport !== null) cases.push(admission('mutation-read-only root-admission'), run('mutation-read-only root-bypassed', 'baseline', { exp: o.mutationExport ?? 1 }));
  cases.push(admission('mutation-log driver-admission'), run('mutation-log driver-bypassed', 'baseline', { logs: 2 }));
  cases.push(run('mutation-ceiling-bypassed', 'baseline', { post: 1 }));
  return {
    kernel: '6.8.0-fabricated',
    docker: '27.3.1',
    api: '1.47',
    image: 'sha256:' + 'ab'.repeat(32),
    ...(o.deniedSinks ? { sinks: { denied: o.deniedSinks } } : {}),
    cases,
  };
}
