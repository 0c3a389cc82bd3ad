// Breakdown: where the time of one gated call goes. Microbenchmarks of the library functions a
// call passes through (parse, checks, Cedar, signing, commit, reply handling), each run in
// this process on a real gate opened from the same files as the end-to-end runs, then the
// in-process gate (handleCall with an upstream that answers at once) and the end-to-end
// difference (gate − direct and relay − direct), measured in the same run.
// Usage: node dist/bench/breakdown.js [--n 2000] [--json]
import Database from 'better-sqlite3';
import { closeSync, fsyncSync, openSync, readFileSync, statSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { openGate } from '../src/gate/open.js';
import { decide } from '../src/gate/decide.js';
import { callDigests, type Call } from '../src/core/call.js';
import { decodeLine, encodeMessage } from '../src/wire/message.js';
import { canonicalize } from '../src/core/canonical.js';
import { entryHash, signEntry, type EntryBody } from '../src/ledger/entry.js';
import { loadGateKey } from '../src/ledger/keys.js';
import { digestJson } from '../src/core/digest.js';
import { setLogSink } from '../src/telemetry/log.js';
import { reportDecision } from '../src/telemetry/decision.js';
import { DecisionTimer } from '../src/telemetry/decision.js';
import type { JsonObject } from '../src/core/json.js';
import type { SqliteStore } from '../src/store/sqlite/store.js';
import { GroupCommit } from '../src/store/sqlite/group-commit.js';
import { callLine, directPath, flags, gateFiles, SETTLED_WARMUP, gatePath, isMain, LineClient, loadNow, machine, ms, relayPath, section, stats, table, tempDir, us } from './lib.js';
import { measureSequential } from './overhead.js';
import '../src/policy/v8-guard.js';
import * as cedar from '@cedar-policy/cedar-wasm/nodejs';
import { loadPolicyFile, type PolicyEngine, type PolicyRequest } from '../src/policy/engine.js';
import type { Manifest } from '../src/contract/manifest-types.js';
import { marshalContext } from '../src/policy/marshal.js';
import { policyReads } from '../src/policy/reads.js';
import { parsePolicySet } from '../src/policy/load.js';
import { argsRecordType, inferRecord, toolAttributes } from '../src/policy/schema.js';

/** The Cedar request as the engine built it before ADR 039: the arguments and task attributes
 *  the policies read (as since issue 12.7), and all of the rest: session, every count exact,
 *  every attribute of the resource's entity (of every tool's if a condition names a tool). */
export function cedarRequestBefore(manifest: Manifest, engine: PolicyEngine, policyText: string, task: JsonObject, req: PolicyRequest): cedar.StatefulAuthorizationCall {
  const reads = policyReads(parsePolicySet(manifest, policyText, 'policy').byId.values());
  const exact = { minute: 'exact', hour: 'exact', day: 'exact' } as const;
  const { context } = marshalContext(req, {
    records: 'all',
    args: { reads: reads.args, send: reads.args, types: argsRecordType(manifest).attributes },
    task: { reads: reads.task, send: reads.task, types: inferRecord(task).attributes },
    session: 'all',
    calls: exact,
    callsAll: exact,
  });
  const entity = (name: string) => ({ uid: { type: 'Tool', id: name }, attrs: toolAttributes(manifest, manifest.tools[name]), parents: [] });
  return {
    principal: { type: 'Agent', id: req.agent },
    action: { type: 'Action', id: 'call_tool' },
    resource: { type: 'Tool', id: req.tool },
    context: context as unknown as cedar.Context,
    preparsedPolicySetId: engine.policySetId,
    entities: reads.toolLiterals ? Object.keys(manifest.tools).map(entity) : [entity(req.tool)],
  };
}

export interface Micro {
  step: string;
  /** Median of batch means, µs per operation. */
  median: number;
  /** Fastest batch mean, µs per operation: closest to the cost on an idle core. */
  min: number;
  perCall: number; // how many times one gated call does this
  note?: string;
}

/** Time `fn` in `batches` batches of `k` calls; per-operation µs (median and best batch). */
export function micro(fn: () => unknown, k: number, batches = 15): { median: number; min: number } {
  for (let i = 0; i < Math.max(5, k >> 2); i++) fn();
  const per: number[] = [];
  for (let b = 0; b < batches; b++) {
    const t = performance.now();
    for (let i = 0; i < k; i++) fn();
    per.push(((performance.now() - t) * 1000) / k);
  }
  per.sort((a, b) => a - b);
  return { median: per[per.length >> 1], min: per[0] };
}

/** The same for an async operation run sequentially. */
export async function microAsync(fn: () => Promise<unknown>, k: number, batches = 9): Promise<{ median: number; min: number }> {
  for (let i = 0; i < Math.max(3, k >> 3); i++) await fn();
  const per: number[] = [];
  for (let b = 0; b < batches; b++) {
    const t = performance.now();
    for (let i = 0; i < k; i++) await fn();
    per.push(((performance.now() - t) * 1000) / k);
  }
  per.sort((a, b) => a - b);
  return { median: per[per.length >> 1], min: per[0] };
}

/**
 * What the gate itself puts on a call's path, in this process: Gate.handleCall (decision,
 * signature, one durable commit) with an upstream that answers at once, µs per call. What a
 * door adds on top of it is transport; a pure transport has no such floor (ADR 040).
 */
export async function inProcessGateFloor(k: number): Promise<{ median: number; min: number }> {
  setLogSink(() => undefined);
  const files = gateFiles();
  const opened = await openGate({ home: files.home, manifestPath: files.manifest, policyPath: files.policy, contextPath: files.context, mode: 'enforce', approverKeys: [], callTimeoutMs: 60_000 });
  const forward = () => Promise.resolve({ result: { content: [{ type: 'text', text: 'ok' }] } });
  try {
    return await microAsync(() => opened.gate.handleCall({ tool: 'echo', arguments: { message: 'hello from the benchmark' }, meta: {} }, forward), k);
  } finally {
    await opened.close('bench');
  }
}

export async function measureBreakdown(scale: number): Promise<{ rows: Micro[]; rateRows: (string | number)[][]; inProcess: (string | number)[][] }> {
  const k = Math.max(5, Math.round(2000 * scale)); // cheap steps
  const kc = Math.max(3, Math.round(100 * scale)); // durable commits
  const rows: Micro[] = [];
  const add = (step: string, r: { median: number; min: number }, perCall: number, note?: string) => rows.push({ step, ...r, perCall, note });

  setLogSink(() => undefined); // the decision log line is built, not written to this terminal
  const files = gateFiles();
  const opened = await openGate({ home: files.home, manifestPath: files.manifest, policyPath: files.policy, contextPath: files.context, mode: 'enforce', approverKeys: [], callTimeoutMs: 60_000 });
  const { gate } = opened;
  const p = gate.parts;
  const db = (opened.store as SqliteStore).db;
  try {
    // 1. The host's line: strict parse, then the canonical form the gate forwards.
    const line = Buffer.from(callLine(42).trimEnd());
    add('parse: decodeLine (UTF-8, strict JSON, JSON-RPC shape)', micro(() => decodeLine(line), k), 1);
    const msg = decodeLine(line) as { kind: 'request'; msg: JsonObject };
    add('forward: encodeMessage (RFC 8785 form of the request)', micro(() => encodeMessage(msg.msg), k), 1);

    // 2. Deciding: context (a stat per call), fingerprint, the checks, Cedar alone, the rate windows alone.
    // The context, manifest and policy files are stat'ed once per event-loop turn (ADR 032): the
    // stat is what the first decision of a turn pays; later ones in the turn find the stamp.
    const ctxPath = files.context;
    add('context: one stat of a watched file (3 files, each once per turn: ADR 032)', micro(() => statSync(ctxPath, { bigint: true }), k), 3, 'a turn of N decisions pays 3 stats, not 3N');
    add('context: ContextSource.get later in the same turn (stamp kept)', micro(() => p.context.get(), k), 0);
    const ctx = p.context.get();
    const args = { message: 'hello from the benchmark' };
    const call: Call = { tool: 'echo', arguments: args, meta: {}, taskId: ctx.taskId };
    add('fingerprint + args digest: callDigests (one canonical form of the arguments, 2 SHA-256)', micro(() => callDigests('echo', args, ctx.taskId), k), 1);
    const now = Date.now();
    const counts = p.services.rates.counts(ctx.taskId, 'echo', now);
    add('rates: RateCounter.counts (2 statements, 10 index seeks), empty table', micro(() => p.services.rates.counts(ctx.taskId, 'echo', now), k), 1);
    const rules = p.rules.current();
    const session = gate.session;
    const input = { manifest: rules.manifest, policy: rules.policy, context: ctx, services: p.services, session, now };
    const req = { agent: p.services.agent, tool: 'echo', args, task: ctx.task, sessionLabel: session.label, ...counts };
    // The Cedar step (ADR 039), before and after, on one engine loaded from the gate's files:
    // the request as it was sent before (every context record, every tool attribute), the
    // request the engine sends now (what the policies read) asked of Cedar each time, and the
    // engine's evaluate, which reuses the answer of an identical request (this one: same agent,
    // tool, argument read, count class).
    const engine = loadPolicyFile(rules.manifest.manifest, files.policy, { task: ctx.task });
    const before = cedarRequestBefore(rules.manifest.manifest, engine, readFileSync(files.policy, 'utf8'), ctx.task, req);
    add('Cedar as before ADR 039: session, counts, all tool attributes sent, statefulIsAuthorized', micro(() => cedar.statefulIsAuthorized(before), k), 0, 'main before ADR 039');
    add('Cedar: the request the engine sends (what policies read), asked of Cedar each time', micro(() => engine.evaluateFresh(req), k), 0, 'an answer not kept yet');
    add('Cedar: engine.evaluate, the answer of an identical request reused', micro(() => engine.evaluate(req), k), 1, 'what the gate pays per call here');
    add('decide(): contract → flow → policy (rates + Cedar) → operations → approval', micro(() => decide(call, input), k), 1);

    // 3. Recording: canonical body, Ed25519 signature, entry hash, the INSERT inside a transaction.
    const key = loadGateKey(join(files.home, 'gate.key'));
    const d0 = decide(call, input);
    const body: EntryBody = {
      v: 1, seq: 123456, ts: new Date().toISOString(), prev: 'sha256:' + 'a'.repeat(64), kind: 'decision', outcome: 'allow', tool: 'echo',
      fingerprint: d0.fingerprint, args_digest: digestJson(args), context_digest: ctx.digest, task: ctx.taskId, session_label: session.label, agent: p.services.agent,
      manifest_digest: rules.manifest.digest, policy_digest: rules.policy.digest, policy_ids: ['echo-allowed'],
    };
    add('canonicalize an entry body', micro(() => canonicalize(body), k), 2);
    add('sign: signEntry (canonical + Ed25519 sign, node:crypto)', micro(() => signEntry(body, key), k), 2);
    const signed = signEntry(body, key);
    add('hash: entryHash (canonical + SHA-256)', micro(() => entryHash(signed), k), 2);
    const fields = { kind: 'result' as const, outcome: 'ok' as const, fingerprint: d0.fingerprint, decision: 1, result_digest: digestJson({ content: [{ type: 'text', text: 'ok' }] }) };
    const batchAppend = 200;
    const appendMany = db.transaction(() => {
      for (let i = 0; i < batchAppend; i++) p.ledger.appendInTx(fields);
    });
    const ap = micro(() => appendMany(), 1, Math.max(3, Math.round(10 * scale)));
    add('ledger.appendInTx (head read + sign + hash + INSERT), no commit', { median: ap.median / batchAppend, min: ap.min / batchAppend }, 2, 'inline at one call in flight; signed on the signing thread once a group holds 4 entries (ADR 042)');

    // 4. Committing: the gate's durable commit, and floors measured beside it.
    add('gate commit: GroupCommit.run(append one entry), WAL, synchronous=FULL', await microAsync(() => p.commit.run(() => p.ledger.appendInTx(fields)), kc), 1, 'one on the path; the result entry rides in the next group (ADR 017)');
    const scratch = tempDir('cloakpipe-bench-sqlite-');
    const floorDb = (sync: 'FULL' | 'NORMAL') => {
      const fdb = new Database(join(scratch, `floor-${sync}.db`));
      fdb.pragma('journal_mode = WAL');
      fdb.pragma(`synchronous = ${sync}`);
      fdb.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT NOT NULL)');
      return fdb;
    };
    const full = floorDb('FULL');
    const ins = full.prepare('INSERT INTO t (body) VALUES (?)');
    const bodyText = canonicalize(signed);
    add('floor: bare SQLite commit, 1 row, WAL, synchronous=FULL', micro(() => full.transaction(() => ins.run(bodyText)).immediate(), kc, 9), 0, 'one fsync of the WAL');
    const gcFull = new GroupCommit(full);
    add('floor: the same through GroupCommit (adds a setImmediate hop)', await microAsync(() => gcFull.run(() => ins.run(bodyText)), kc), 0);
    const normal = floorDb('NORMAL');
    const insN = normal.prepare('INSERT INTO t (body) VALUES (?)');
    add('floor: bare SQLite commit, 1 row, WAL, synchronous=NORMAL', micro(() => normal.transaction(() => insN.run(bodyText)).immediate(), k >> 2), 0, 'no fsync at commit (not durable on power loss)');
    const fd = openSync(join(scratch, 'fsync.bin'), 'w');
    const page = Buffer.alloc(4096, 1);
    add('floor: write 4 KiB + fsync (node:fs)', micro(() => (writeSync(fd, page, 0, page.length, 0), fsyncSync(fd)), kc, 9), 0, 'the disk alone');
    closeSync(fd);
    full.close();
    normal.close();

    // 5. Reply path: the server's line parsed, its result digested, telemetry.
    const replyLine = '{"jsonrpc":"2.0","id":42,"result":{"content":[{"type":"text","text":"ok"}]}}';
    add('reply: JSON.parse of the server line', micro(() => JSON.parse(replyLine), k), 1);
    add('reply: digestJson(result)', micro(() => digestJson({ content: [{ type: 'text', text: 'ok' }] }), k), 1);
    const timer = new DecisionTimer();
    timer.decided({ declared: d0.tool !== undefined, fingerprint: d0.fingerprint, sessionLabel: session.label });
    timer.committed();
    add('telemetry: reportDecision (span + JSON log line built)', micro(() => reportDecision(timer.report('echo', { kind: 'forwarded', reply: { result: {} }, entry: 1 }, 'enforce')), k), 1);

    // 6. The whole gate in this process: handleCall with an upstream that answers at once.
    const forward = () => Promise.resolve({ result: { content: [{ type: 'text', text: 'ok' }] } });
    add('in-process gate: Gate.handleCall (1 durable commit on the path), instant upstream', await microAsync(() => gate.handleCall({ tool: 'echo', arguments: args, meta: {} }, forward), kc), 1);
    // CPU per call with group commit at work: 64 in flight, CPU time from process.cpuUsage.
    const inProcess: (string | number)[][] = [];
    for (const inFlight of [1, 64]) {
      const total = Math.max(inFlight, Math.round((inFlight === 1 ? 100 : 1280) * scale));
      let started = 0;
      const c0 = process.cpuUsage();
      const t = performance.now();
      await Promise.all(
        Array.from({ length: inFlight }, async () => {
          while (started < total) {
            started++;
            await gate.handleCall({ tool: 'echo', arguments: args, meta: {} }, forward);
          }
        }),
      );
      const wall = (performance.now() - t) / 1000;
      const c = process.cpuUsage(c0);
      const cpuUs = (c.user + c.system) / total;
      inProcess.push([inFlight, total, Math.round(total / wall).toLocaleString('en-US'), cpuUs.toFixed(0), Math.round(1e6 / cpuUs).toLocaleString('en-US')]);
    }

    // 7. The rate windows as the day fills: one row per allowed call, counted on every call.
    //    Rows of one task and tool spread over the last day; the running counts (n_tool, n_all)
    //    are renumbered in bulk here the way the counter's own migration does it, rather than
    //    recording 100,000 calls one by one. record() is timed inside a transaction rolled back.
    const rateRows: (string | number)[][] = [];
    db.exec('DELETE FROM rate_calls');
    const insRate = db.prepare('INSERT INTO rate_calls (task_id, tool, at_ms) VALUES (?, ?, ?)');
    const renumber = db.prepare(`UPDATE rate_calls SET n_tool = w.n_tool, n_all = w.n_all FROM (
        SELECT rowid AS id, ROW_NUMBER() OVER (PARTITION BY task_id, tool ORDER BY at_ms, rowid) AS n_tool,
               ROW_NUMBER() OVER (PARTITION BY task_id ORDER BY at_ms, rowid) AS n_all FROM rate_calls) AS w
      WHERE rate_calls.rowid = w.id`);
    let have = 0;
    for (const target of [0, 1_000, 10_000, 100_000].map((x) => Math.round(x * Math.min(1, scale * 2)))) {
      db.transaction(() => {
        for (; have < target; have++) insRate.run(ctx.taskId ?? '', 'echo', now - 1000 - ((have * 797) % 80_000_000));
        renumber.run();
      })();
      const r = micro(() => p.services.rates.counts(ctx.taskId, 'echo', now), Math.max(3, Math.round(200 * scale)), 7);
      db.exec('BEGIN IMMEDIATE');
      const rec = micro(() => p.services.rates.record(ctx.taskId, 'echo', now), Math.max(3, Math.round(200 * scale)), 7);
      db.exec('ROLLBACK');
      const dd = micro(() => decide(call, input), Math.max(3, Math.round(100 * scale)), 7);
      rateRows.push([target.toLocaleString('en-US'), us(r.median / 1000), us(r.min / 1000), us(rec.median / 1000), us(dd.median / 1000)]);
    }
    return { rows, rateRows, inProcess };
  } finally {
    await opened.close('bench');
    setLogSink(null);
  }
}

export function breakdownTable(rows: Micro[]): string {
  return table(
    ['step', 'per call', 'median µs', 'best µs', 'note'],
    rows.map((r) => [r.step, r.perCall === 0 ? (r.step.startsWith('floor') ? 'floor' : '—') : `×${r.perCall}`, r.median.toFixed(1), r.min.toFixed(1), r.note ?? '']),
  );
}

/**
 * One call in flight through the real binary, split by the gate's own clock (its `decision` log
 * line): `decide` from the call reaching the gate to its decision (inside its group, after the
 * deferred result entries), `commit` from there to the decision being durable (sealing, COMMIT's
 * fsync), `upstream` from forwarding to the reply. The rest of the round trip is the pipes on both sides, parsing
 * and writing the reply. Direct calls run interleaved, in the same chunks.
 */
export async function oneCallTimeline(n: number, warmup: number, chunk = 250): Promise<(string | number)[][]> {
  const direct = await LineClient.start(directPath());
  const gate = await LineClient.start(gatePath(gateFiles()));
  try {
    await direct.sequential(warmup);
    await gate.sequential(warmup);
    gate.timeCalls();
    const rtDirect: number[] = [];
    const rtGate: number[] = [];
    for (let done = 0; done < n; done += chunk) {
      rtDirect.push(...(await direct.sequential(Math.min(chunk, n - done))));
      rtGate.push(...(await gate.sequential(Math.min(chunk, n - done))));
    }
    const t = gate.timings!.slice(-n);
    const [d, c, u] = [stats(t.map((x) => x.decide)), stats(t.map((x) => x.commit)), stats(t.map((x) => x.upstream))];
    const g = stats(rtGate);
    const dir = stats(rtDirect);
    return [
      ['round trip straight to the upstream', ms(dir.p50), ms(dir.p99)],
      ['round trip through the gate', ms(g.p50), ms(g.p99)],
      ['  in the gate: the call reaching the gate → decided (decide_ms: its group\'s turn, BEGIN, the previous call\'s result entry and settlement, which run first, then the checks)', ms(d.p50), ms(d.p99)],
      ['  in the gate: decided → durable (commit_ms: its entry, the group\'s entries sealed inline, COMMIT with its fsync)', ms(c.p50), ms(c.p99)],
      ['  in the gate: forwarded → the upstream\'s reply (upstream_ms; the upstream and its pipe)', ms(u.p50), ms(u.p99)],
      ['  the rest: host ↔ gate pipes, reading the call, writing the reply (gate p50 − the three p50s)', ms(g.p50 - d.p50 - c.p50 - u.p50), ''],
    ];
  } finally {
    await direct.close().catch(() => undefined);
    await gate.close().catch(() => undefined);
  }
}

export async function main() {
  const f = flags({ scale: { type: 'string' } }, { n: 2000, warmup: SETTLED_WARMUP });
  const scale = f.values.scale ? Number(f.values.scale) : 1;
  const loadBefore = loadNow();
  const { rows, rateRows, inProcess } = await measureBreakdown(scale);
  const e2e = await measureSequential([directPath(), relayPath(), gatePath(gateFiles())], f.n, f.warmup, 250);
  const [direct, relay, gated] = e2e.map((r) => r.stats);
  const get = (prefix: string) => rows.find((r) => r.step.startsWith(prefix))!;
  const cpuSteps = rows.filter((r) => r.perCall > 0 && !r.step.startsWith('in-process') && !r.step.startsWith('gate commit') && !r.step.startsWith('decide()') && !r.step.startsWith('rates') && !r.step.startsWith('Cedar') && !r.step.startsWith('canonicalize') && !r.step.startsWith('sign:') && !r.step.startsWith('hash:'));
  const cpu = cpuSteps.reduce((s, r) => s + r.median * r.perCall, 0) + get('decide()').median; // appendInTx covers sign + hash + canonical
  const commit = get('gate commit').median;
  const summary = table(
    ['where one gated call goes', 'µs (median)'],
    [
      ['CPU in the gate: parse + context + fingerprint + decide + 2 appends + reply + telemetry (sum of the steps above)', cpu.toFixed(0)],
      ['1 durable commit on the path (decision entry before forwarding; the result entry commits with the next group, ADR 017)', commit.toFixed(0)],
      ['in-process gate, measured whole (handleCall)', get('in-process').median.toFixed(0)],
      ['one more stdio hop (relay − direct, p50, end to end)', us(relay.p50 - direct.p50)],
      ['end to end: gate − direct, p50', us(gated.p50 - direct.p50)],
      ['end to end: gate − direct, p99', us(gated.p99 - direct.p99)],
    ],
  );
  const timeline = await oneCallTimeline(f.n, f.warmup);
  const inProc = table(['in-process gate, in flight', 'calls', 'calls/s (this run)', 'CPU µs/call', 'calls/s per CPU-second (one idle core)'], inProcess);
  const rates = table(['rate_calls rows (same task and tool, last day)', 'counts() median µs', 'counts() best µs', 'record() median µs', 'decide() median µs'], rateRows);
  if (f.json) return void process.stdout.write(JSON.stringify({ machine: machine(), loadBefore, rows, rateRows, inProcess, e2e, timeline }) + '\n');
  section('Breakdown: one gated call, step by step (in process, this run)', `${machine()}\nload before the run: ${loadBefore}\n\n${breakdownTable(rows)}\n\n${summary}\n\nEnd to end in the same run (${f.n} sequential calls): direct p50 ${ms(direct.p50)} ms, relay p50 ${ms(relay.p50)} ms, gate p50 ${ms(gated.p50)} ms.\n\nOne call in flight through the binary, as the gate's own decision log times it (${f.n} calls, direct interleaved; ms):\n\n${table(['where a round trip goes', 'p50', 'p99'], timeline)}\n\nThe gate in this process, an upstream that answers at once, CPU time from process.cpuUsage (load-independent):\n\n${inProc}\n\nThe rate windows as the day fills (one row per allowed call, counted on every call):\n\n${rates}`);
}

if (isMain(import.meta.url)) await main();
