// `cloakpipe scope report` over fabricated, signed ledgers (homes made by `cloakpipe init`) and
// evidence files: every status of every claim, a deployment-side path that keeps complete
// mediation NOT ESTABLISHED whatever else is present, and a single observed effect that does not
// establish completeness.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { readFileSync, writeFileSync } from 'node:fs';
import { buildManifest } from '../../src/contract/manifest.js';
import { operationDigest } from '../../src/operations/operation-id.js';
import { resolveHome } from '../../src/store/home.js';
import { openOperationsReader } from '../../src/store/sqlite/store.js';
import type { ScopeReport } from '../../src/scope/report.js';
import { cloakpipe as cloakpipeRaw, tempDir, ROOT } from '../helpers/cli.js';

// The machine is shared and loaded: generous timeouts, so a slow start is not a failure.
const cloakpipe = (args: string[]) => cloakpipeRaw(args, { timeout: 180_000 });
function makeHome(): string {
  const home = join(tempDir('cp-scope-home-'), 'home');
  const r = cloakpipe(['init', '--home', home]);
  if (r.status !== 0) throw new Error(`init failed: ${r.status} ${r.stderr}`);
  return home;
}
import { History, scopeEvidence, suiteEvidence, type Fabricated } from './fixtures.js';

const TOOLS = {
  lookup_customer: { effect: 'read', arguments: { customer_id: { type: 'string' } } },
  create_order: {
    effect: 'write',
    operation_id: 'idempotency_key',
    arguments: { sku: { type: 'string' }, quantity: { type: 'integer' }, idempotency_key: { type: 'string' } },
  },
};
const STATEMENT = { assessed_by: 'platform security', assessed_at: '2026-11-18', basis: ['threat model TM-31'] };
const P = {
  gateway: { id: 'gateway', kind: 'agent', route: { via: 'gate', tool: 'create_order' }, mediator: { type: 'gate' } },
  direct: { id: 'direct-api', kind: 'agent', route: { via: 'network', endpoint: 'https://orders.internal' }, mediator: { type: 'confinement', protection: 'network' } },
  drop: { id: 'import-drop', kind: 'agent', route: { via: 'file', path: '/export/orders' }, mediator: { type: 'confinement', protection: 'read_only_root' } },
  backofficeNone: { id: 'backoffice', kind: 'deployment', route: { via: 'database', target: 'orders table' }, mediator: { type: 'none' } },
  backofficeExternal: { id: 'backoffice', kind: 'deployment', route: { via: 'database', target: 'orders table' }, mediator: { type: 'external', control: 'db grants' } },
};

function manifestDoc(paths: object[], completeness?: object) {
  return { version: 1, release: 'order-agent@test', tools: TOOLS, effects: { order_create: { description: 'an order is committed', paths, ...(completeness ? { completeness } : {}) } } };
}

interface Setup {
  paths: object[];
  completeness?: object;
  history?: (h: History) => void;
  evidence?: (made: { calls: Fabricated[] }) => object[];
  noHome?: boolean;
}

/** Write the manifest and evidence, fabricate the history, run the command with --json. */
function report(s: Setup, extraArgs: string[] = []) {
  const dir = tempDir('cp-scope-');
  const doc = manifestDoc(s.paths, s.completeness);
  const manifest = join(dir, 'manifest.json');
  writeFileSync(manifest, JSON.stringify(doc));
  const args = ['scope', 'report', '--manifest', manifest, '--json', ...extraArgs];
  const made = { calls: [] as Fabricated[] };
  let home: string | null = null;
  if (!s.noHome) {
    home = makeHome();
    const h = new History(home, buildManifest(doc).digest);
    try {
      h.startup('enforce');
      s.history?.(h);
    } finally {
      h.close();
    }
    args.push('--home', home);
  }
  for (const [i, ev] of (s.evidence?.(made) ?? []).entries()) {
    const f = join(dir, `evidence-${i}.json`);
    writeFileSync(f, JSON.stringify(ev));
    args.push('--evidence', f);
  }
  const r = cloakpipe(args);
  const out = r.status === 0 || r.status === 1 ? (JSON.parse(r.stdout) as ScopeReport) : null;
  return { status: r.status, stderr: r.stderr, out, effect: out?.effects[0], home, manifest, made };
}

/** A history with committed orders; returns what it made through `into`. */
const orders = (into: Fabricated[], n = 2) => (h: History) => {
  for (let i = 1; i <= n; i++) into.push(h.allow('create_order', { sku: `SKU-${i}`, quantity: 1, idempotency_key: `K-${i}` }, { operationId: `K-${i}` }));
};
const receiptFor = (c: Fabricated) => ({ type: 'receipt', tool: 'create_order', observer: 'orders audit trigger', operation: c.operation, fingerprint: c.fingerprint });

// ---------------------------------------------------------------------------------------------
test('no ledger, no evidence: authorization, correlation, observation NOT ASSESSED; a declared path set alone establishes nothing', () => {
  const r = report({ paths: [P.gateway], completeness: STATEMENT, noHome: true });
  assert.equal(r.status, 0);
  const c = r.effect!.claims;
  assert.equal(c.authorization.status, 'not_assessed');
  assert.equal(c.correlation.status, 'not_assessed');
  assert.equal(c.observation.status, 'not_assessed');
  assert.equal(c.complete_mediation.status, 'not_established', 'a declaration and a statement are not evidence');
  assert.ok(c.complete_mediation.missing.some((m) => /path gateway .*mediation not assessed: no ledger given/.test(m)));
  assert.ok(c.complete_mediation.reasons.some((m) => /Declaring a path set does not by itself establish completeness/.test(m)));
  assert.match(r.out!.note, /Declaring a path set does not by itself establish completeness/);
});

test('authorization NOT ASSESSED when no declared path goes through the gate', () => {
  const r = report({ paths: [P.direct], evidence: () => [suiteEvidence()] });
  assert.equal(r.effect!.claims.authorization.status, 'not_assessed');
  assert.match(r.effect!.claims.authorization.reasons[0], /no declared path goes through the gate/);
  assert.equal(r.effect!.claims.correlation.status, 'not_assessed');
});

test('a single observed effect (authorized, correlated, observed) does not establish completeness', () => {
  const calls: Fabricated[] = [];
  const r = report({ paths: [P.gateway], history: orders(calls, 1), evidence: () => [scopeEvidence([receiptFor(calls[0])])] });
  assert.equal(r.status, 0);
  const c = r.effect!.claims;
  assert.equal(c.authorization.status, 'established');
  assert.equal(c.correlation.status, 'established');
  assert.equal(c.observation.status, 'established');
  assert.equal(r.effect!.paths[0].mediation.status, 'established');
  assert.equal(c.complete_mediation.status, 'not_established');
  assert.deepEqual(c.complete_mediation.missing.length, 1);
  assert.match(c.complete_mediation.missing[0], /no completeness statement/);
  assert.ok(c.complete_mediation.reasons.some((x) => /one path produced the effect, not that no other path can/.test(x)));
});

test('complete mediation ESTABLISHED: every path has checkable mediation evidence and the path set an assessed statement', () => {
  const calls: Fabricated[] = [];
  const r = report({
    paths: [P.gateway, P.direct, P.drop],
    completeness: STATEMENT,
    history: orders(calls),
    evidence: () => [scopeEvidence([receiptFor(calls[0])]), suiteEvidence()],
  });
  assert.equal(r.status, 0);
  const c = r.effect!.claims;
  assert.equal(c.complete_mediation.status, 'established', JSON.stringify(c.complete_mediation));
  assert.deepEqual([c.complete_mediation.missing, c.complete_mediation.attested], [[], []]);
  assert.deepEqual(c.complete_mediation.counts, { paths: 3, established: 3, attested: 0, missing: 0 });
  assert.ok(c.complete_mediation.reasons.some((x) => /rests on that assessment, which cloakpipe cannot check/.test(x)));
});

test('an operator attestation is ATTESTED, never ESTABLISHED: an externally mediated deployment path keeps complete mediation ATTESTED', () => {
  const calls: Fabricated[] = [];
  const r = report({
    paths: [P.gateway, P.direct, P.drop, P.backofficeExternal],
    completeness: STATEMENT,
    history: orders(calls),
    evidence: () => [
      scopeEvidence([receiptFor(calls[0]), { type: 'mediation', effect: 'order_create', path: 'backoffice', attested_by: 'dba team', basis: 'grants review GR-7' }]),
      suiteEvidence(),
    ],
  });
  assert.equal(r.status, 0);
  const c = r.effect!.claims;
  assert.equal(c.complete_mediation.status, 'attested', JSON.stringify(c.complete_mediation));
  assert.deepEqual(c.complete_mediation.missing, []);
  assert.equal(c.complete_mediation.attested.length, 1);
  assert.match(c.complete_mediation.attested[0], /^path backoffice \(deployment, mediator external \(db grants\)\): attested by dba team/);
  assert.deepEqual(c.complete_mediation.counts, { paths: 4, established: 3, attested: 1, missing: 0 });
  const back = r.effect!.paths.find((p) => p.id === 'backoffice')!;
  assert.equal(back.mediation.status, 'attested');
  assert.deepEqual(back.mediation.counts, { attestations: 1 });
  assert.match(back.mediation.reasons[0], /an attestation, not checked by cloakpipe/);
  assert.equal(back.observation.status, 'not_assessed');
  const text = cloakpipe(['scope', 'report', '--manifest', r.manifest, '--home', r.home!]);
  assert.match(text.stdout, /4\. complete mediation\s+(ATTESTED|NOT ESTABLISHED)\n/);
  assert.doesNotMatch(text.stdout, /4\. complete mediation\s+ESTABLISHED/);
});

test('--json counts: allowed, linked and each reason a call is not linked, as numbers', () => {
  const calls: Fabricated[] = [];
  const r = report({
    paths: [P.gateway],
    history: (h) => {
      orders(calls, 2)(h);
      h.allow('create_order', { sku: 'U', quantity: 1, idempotency_key: 'K-U' }, { operationId: 'K-U', result: 'unknown' });
      h.refuse('create_order', { sku: 'R', quantity: 9, idempotency_key: 'K-R' }, 'policy_denied');
    },
  });
  const c = r.effect!.claims;
  assert.deepEqual(c.authorization.counts, { allowed: 3, replays: 0, refusals: 1, would_refuse: 0, shadow_allowed: 0, other_manifest: 0 });
  assert.deepEqual(c.correlation.counts, { allowed: 3, linked: 2, no_result: 0, error: 0, unknown: 1, no_stored_outcome: 0, stored_mismatch: 0, operator: 0 });
  assert.deepEqual(r.effect!.paths[0].mediation.counts, { decided_enforce: 4, decided_shadow: 0 });
  // docs/scope.md documents every count a report carries, and every status.
  const doc = readFileSync(join(ROOT, 'docs/scope.md'), 'utf8');
  const keys = new Set<string>();
  const walk = (v: unknown): void => {
    if (Array.isArray(v)) v.forEach(walk);
    else if (v && typeof v === 'object') for (const [k, x] of Object.entries(v)) k === 'counts' ? Object.keys(x as object).forEach((c) => keys.add(c)) : walk(x);
  };
  walk(r.out);
  walk(report({ paths: [P.gateway, P.backofficeExternal], completeness: STATEMENT, history: orders([]), evidence: () => [scopeEvidence([{ type: 'mediation', effect: 'order_create', path: 'backoffice', attested_by: 'dba', basis: 'b' }])] }).out);
  assert.ok(keys.size >= 15, [...keys].join());
  for (const k of keys) assert.match(doc, new RegExp('`' + k + '`'), `count ${k} is documented`);
  for (const s of ['`ESTABLISHED`', '`ATTESTED`', '`ANALOGUE ONLY`', '`NOT ESTABLISHED`', '`attested`']) assert.ok(doc.includes(s), s);
});

test('a deployment-side path without a mediator keeps complete mediation NOT ESTABLISHED whatever else is present', () => {
  const calls: Fabricated[] = [];
  const r = report({
    paths: [P.gateway, P.direct, P.drop, P.backofficeNone],
    completeness: STATEMENT,
    history: orders(calls),
    evidence: () => [
      scopeEvidence([receiptFor(calls[0]), receiptFor(calls[1]), { type: 'mediation', effect: 'order_create', path: 'backoffice', attested_by: 'dba team', basis: 'grants review' }]),
      suiteEvidence({ deniedSinks: ['post_public'] }),
    ],
  });
  assert.equal(r.status, 0, r.stderr);
  const c = r.effect!.claims;
  for (const k of ['authorization', 'correlation', 'observation'] as const) assert.equal(c[k].status, 'established', k);
  for (const p of r.effect!.paths.filter((p) => p.id !== 'backoffice')) assert.equal(p.mediation.status, 'established', p.id);
  assert.equal(c.complete_mediation.status, 'not_established');
  assert.equal(c.complete_mediation.missing.length, 1);
  assert.match(c.complete_mediation.missing[0], /^path backoffice \(deployment, mediator none\): mediation not established: declared unmediated/);
  const back = r.effect!.paths.find((p) => p.id === 'backoffice')!;
  assert.ok(back.mediation.reasons.some((x) => /attestation ignored: the declared mediator is not external/.test(x)));
  assert.ok(c.complete_mediation.reasons.some((x) => /a statement cannot stand in for a path's mediation evidence/.test(x)));
});

test('a deployment path with an external control but no attestation: mediation NOT ASSESSED, completeness NOT ESTABLISHED', () => {
  const r = report({ paths: [P.gateway, P.backofficeExternal], completeness: STATEMENT, history: orders([]) });
  const back = r.effect!.paths.find((p) => p.id === 'backoffice')!;
  assert.equal(back.mediation.status, 'not_assessed');
  assert.equal(r.effect!.claims.complete_mediation.status, 'not_established');
  assert.match(r.effect!.claims.complete_mediation.missing[0], /path backoffice .*mediation not assessed: no attestation/);
});

test('authorization NOT ESTABLISHED with refusals only; the gate still mediates the route', () => {
  const r = report({
    paths: [P.gateway],
    history: (h) => {
      h.refuse('create_order', { sku: 'X', quantity: 500, idempotency_key: 'K-9' });
      h.allow('lookup_customer', { customer_id: 'C1' });
    },
  });
  const c = r.effect!.claims;
  assert.equal(c.authorization.status, 'not_established');
  assert.match(c.authorization.reasons[0], /no allow decision in enforce mode for tool create_order \(and 1 refusal\)/);
  assert.equal(c.correlation.status, 'not_established');
  assert.equal(r.effect!.paths[0].mediation.status, 'established');
});

test('a gate path whose tool the ledger never saw: mediation NOT ESTABLISHED, authorization NOT ESTABLISHED', () => {
  const r = report({ paths: [P.gateway], completeness: STATEMENT, history: (h) => void h.allow('lookup_customer', { customer_id: 'C1' }) });
  assert.equal(r.out!.format, 'cloakpipe-scope-report');
  assert.equal(r.out!.version, 1);
  const gw = r.effect!.paths[0];
  assert.equal(gw.mediation.status, 'not_established');
  assert.match(gw.mediation.reasons[0], /no decision for tool create_order in the ledger/);
  assert.equal(r.effect!.claims.authorization.status, 'not_established');
  assert.equal(r.effect!.claims.complete_mediation.status, 'not_established');
  assert.match(r.effect!.claims.complete_mediation.missing[0], /^path gateway/);
});

test('shadow mode: allows are not authorization, would_refuse is flagged, and the route is not mediated', () => {
  const r = report({
    paths: [P.gateway],
    history: (h) => {
      h.startup('shadow');
      h.allow('create_order', { sku: 'A', quantity: 1, idempotency_key: 'K-1' }, { operationId: 'K-1' });
      h.refuse('create_order', { sku: 'B', quantity: 900, idempotency_key: 'K-2' });
    },
  });
  const c = r.effect!.claims;
  assert.equal(c.authorization.status, 'not_established');
  assert.ok(c.authorization.reasons.some((x) => /1 call allowed in shadow mode/.test(x)));
  assert.ok(c.authorization.reasons.some((x) => /despite a refusal \(would_refuse\): executions without authorization/.test(x)));
  assert.equal(r.effect!.paths[0].mediation.status, 'not_established');
  assert.match(r.effect!.paths[0].mediation.reasons[0], /shadow mode/);
});

test('correlation NOT ESTABLISHED: no result entry, error, unknown outcome, missing or disagreeing stored outcome', () => {
  const r = report({
    paths: [P.gateway],
    history: (h) => {
      h.allow('create_order', { sku: 'A', quantity: 1, idempotency_key: 'K-1' }, { operationId: 'K-1', result: 'none' });
      h.allow('create_order', { sku: 'B', quantity: 1, idempotency_key: 'K-2' }, { operationId: 'K-2', result: 'error' });
      h.allow('create_order', { sku: 'C', quantity: 1, idempotency_key: 'K-3' }, { operationId: 'K-3', result: 'unknown' });
      h.allow('create_order', { sku: 'D', quantity: 1, idempotency_key: 'K-4' }, { operationId: 'K-4', store: false });
      const e = h.allow('create_order', { sku: 'E', quantity: 1, idempotency_key: 'K-5' }, { operationId: 'K-5', store: false });
      // A stored outcome under the same operation id but for another call.
      h.ops.begin('K-5', 'sha256:' + 'f'.repeat(64), 'create_order', Date.now());
      h.ops.settle('K-5', 1, { result: { content: [] } }, Date.now());
      void e;
    },
  });
  const c = r.effect!.claims.correlation;
  assert.equal(c.status, 'not_established');
  const text = c.reasons.join(' | ');
  assert.match(text, /0 of 5 allowed calls/);
  for (const re of [/1 without a result entry/, /1 with an error result/, /1 with an unknown outcome/, /1 without a stored outcome/, /1 whose stored outcome disagrees/]) assert.match(text, re);
  assert.equal(r.effect!.claims.authorization.status, 'established');
});

test('correlation: an operation an operator reconciled is not counted as observed by the gate', () => {
  const r = report({
    paths: [P.gateway],
    history: (h) => {
      h.allow('create_order', { sku: 'A', quantity: 1, idempotency_key: 'K-1' }, { operationId: 'K-1', result: 'unknown' });
      h.ledger.appendInTx({ kind: 'operator', action: 'reconcile', operation: operationDigest('K-1'), outcome: 'succeeded', state_before: 'unknown', state: 'succeeded', attempts: 1, tool: 'create_order', fingerprint: 'sha256:fabricated', user: 'ops' });
    },
  });
  assert.equal(r.effect!.claims.correlation.status, 'not_established');
  assert.match(r.effect!.claims.correlation.reasons.join(' '), /settled by an operator, not observed by the gate/);
});

test('observation NOT ESTABLISHED: receipts that match no allowed call', () => {
  const calls: Fabricated[] = [];
  const r = report({
    paths: [P.gateway],
    history: orders(calls),
    evidence: () => [scopeEvidence([{ ...receiptFor(calls[0]), operation: operationDigest('K-elsewhere') }, { ...receiptFor(calls[1]), result_digest: 'sha256:' + '0'.repeat(64) }])],
  });
  const o = r.effect!.claims.observation;
  assert.equal(o.status, 'not_established');
  assert.match(o.reasons[0], /0 of 2 receipts/);
  assert.match(o.reasons[0], /2 receipts match no allowed call/);
});

test('observation ANALOGUE ONLY: the confinement suite alone, never the effect itself', () => {
  const r = report({ paths: [P.gateway, P.direct, P.drop], history: orders([]), evidence: () => [suiteEvidence()] });
  const o = r.effect!.claims.observation;
  assert.equal(o.status, 'analogue_only');
  assert.ok(o.reasons.some((x) => /a synthetic canary probe is not order_create/.test(x)));
  assert.ok(o.reasons.some((x) => /only analogue evidence/.test(x)));
  const gw = r.effect!.paths.find((p) => p.id === 'gateway')!;
  assert.equal(gw.observation.status, 'not_assessed');
  assert.match(gw.observation.reasons[0], /no receipt for create_order/);
  for (const id of ['direct-api', 'import-drop']) {
    const p = r.effect!.paths.find((x) => x.id === id)!;
    assert.equal(p.observation.status, 'analogue_only');
    assert.equal(p.authorization.status, 'not_assessed');
    assert.equal(p.correlation.status, 'not_assessed');
    assert.equal(p.mediation.status, 'established');
  }
});

test('confinement mediation: a baseline leak, a missing mutation, accepted admission, no evidence', () => {
  const leak = report({ paths: [P.direct, P.drop], evidence: () => [suiteEvidence({ baselineNetwork: 1, mutationExport: null })], noHome: true });
  const [direct, drop] = leak.effect!.paths;
  assert.equal(direct.mediation.status, 'not_established');
  assert.match(direct.mediation.reasons[0], /saw the canary 1 time with the protection in place: it did not hold/);
  assert.equal(drop.mediation.status, 'not_established');
  assert.match(drop.mediation.reasons.join(' '), /no run with read_only_root removed/);
  const accepted = report({ paths: [P.direct], evidence: () => [suiteEvidence({ admissionRefused: false })], noHome: true });
  assert.equal(accepted.effect!.paths[0].mediation.status, 'not_established');
  assert.match(accepted.effect!.paths[0].mediation.reasons.join(' '), /admission accepted the weakened configuration/);
  const blind = report({ paths: [P.direct], evidence: () => [suiteEvidence({ mutationNetwork: 0 })], noHome: true });
  assert.match(blind.effect!.paths[0].mediation.reasons.join(' '), /observers are not shown able to see this route/);
  const none = report({ paths: [P.direct], noHome: true });
  assert.equal(none.effect!.paths[0].mediation.status, 'not_assessed');
  assert.equal(none.effect!.claims.complete_mediation.status, 'not_established');
});

test('a tampered ledger: exit 1, every claim resting on it NOT ESTABLISHED', () => {
  const calls: Fabricated[] = [];
  const r0 = report({ paths: [P.gateway], completeness: STATEMENT, history: (h) => {
    orders(calls)(h);
    h.tamper(calls[0].seq, 'tool', 'create_order ');
  } });
  assert.equal(r0.status, 1, r0.stderr);
  const c = r0.effect!.claims;
  assert.equal(r0.out!.ledger!.verified, false);
  for (const k of ['authorization', 'correlation'] as const) {
    assert.equal(c[k].status, 'not_established');
    assert.match(c[k].reasons[0], /failed verification at entry/);
  }
  assert.equal(c.complete_mediation.status, 'not_established');
});

test('a duplicate key in front of a signed decision: the one verifier refuses it, so scope uses nothing of that ledger', () => {
  // JSON.parse keeps the last (signed) value, SQLite's json_extract the first: a reader that
  // parsed leniently and checked signatures accepted this body.
  const calls: Fabricated[] = [];
  const r = report({ paths: [P.gateway], completeness: STATEMENT, history: (h) => {
    orders(calls)(h);
    h.prepend(calls[0].seq, 'tool', 'drop_tables');
  } });
  assert.equal(r.status, 1, r.stderr);
  assert.equal(r.out!.ledger!.verified, false);
  assert.match(r.out!.ledger!.broken!.why, /^entry_not_canonical: entry is not strict JSON \(duplicate_key\)/);
  assert.equal(r.out!.ledger!.broken!.seq, calls[0].seq);
  assert.equal(r.effect!.claims.authorization.status, 'not_established');
});

test('the operations database and the ledger: stored outcomes are read, entries verified', () => {
  const calls: Fabricated[] = [];
  const r = report({ paths: [P.gateway], history: orders(calls, 3) });
  assert.equal(r.out!.ledger!.verified, true);
  assert.equal(r.out!.ledger!.stored_outcomes, 3);
  const ops = openOperationsReader(resolveHome(r.home!).operations);
  try {
    assert.equal(ops.operations.list(undefined, 100).length, 3);
  } finally {
    ops.close();
  }
  assert.match(r.effect!.claims.correlation.reasons[0], /3 of 3 allowed calls/);
});

test('text output: statuses, missing pieces, the declaration note; no argument value ever appears', () => {
  const canary = 'CANARY' + 'b7'.repeat(8);
  const r = report({ paths: [P.gateway, P.backofficeNone], history: (h) => void h.allow('create_order', { sku: canary, quantity: 1, idempotency_key: canary }, { operationId: canary }) });
  assert.ok(r.out && !JSON.stringify(r.out).includes(canary));
  const t = cloakpipe(['scope', 'report', '--manifest', r.manifest, '--home', r.home!]);
  assert.equal(t.status, 0, t.stderr);
  assert.ok(!t.stdout.includes(canary));
  assert.match(t.stdout, /1\. authorization\s+ESTABLISHED/);
  assert.match(t.stdout, /4\. complete mediation\s+NOT ESTABLISHED\n\s+missing:\n\s+- path backoffice/);
  assert.match(t.stdout, /Declaring a path set does not by itself establish completeness/);
  assert.match(t.stdout, /path by path/);
  assert.match(t.stdout, /backoffice \(deployment; database: orders table; mediator none\)/);
});

test('usage and configuration errors exit 2; --help exits 0', () => {
  const dir = tempDir('cp-scope-usage-');
  const good = join(dir, 'm.json');
  writeFileSync(good, JSON.stringify(manifestDoc([P.gateway])));
  const noEffects = join(dir, 'plain.json');
  writeFileSync(noEffects, JSON.stringify({ version: 1, release: 'r', tools: TOOLS }));
  const badEffects = join(dir, 'bad.json');
  writeFileSync(badEffects, JSON.stringify(manifestDoc([{ ...P.gateway, kind: 'vendor' }])));
  const badEvidence = join(dir, 'ev.json');
  writeFileSync(badEvidence, JSON.stringify(scopeEvidence([{ type: 'receipt', tool: 't', observer: 'o' }])));
  const cases: Array<[string[], RegExp]> = [
    [['scope'], /missing subcommand/],
    [['scope', 'summary', '--manifest', good], /unknown subcommand/],
    [['scope', 'report'], /missing required --manifest/],
    [['scope', 'report', '--manifest', good, '--bogus'], /unknown option/i],
    [['scope', 'report', '--manifest', join(dir, 'absent.yaml')], /cannot read manifest/],
    [['scope', 'report', '--manifest', noEffects], /declares no effects/],
    [['scope', 'report', '--manifest', badEffects], /effects\.order_create\.paths\[0\]\.kind/],
    [['scope', 'report', '--manifest', good, '--evidence', badEvidence], /names the operation or the fingerprint/],
    [['scope', 'report', '--manifest', good, '--evidence', join(dir, 'none.json')], /cannot read evidence file/],
    [['scope', 'report', '--manifest', good, '--home', join(dir, 'no-home')], /no ledger/],
  ];
  for (const [args, re] of cases) {
    const r = cloakpipe(args);
    assert.equal(r.status, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, re);
  }
  const h = cloakpipe(['scope', '--help']);
  assert.equal(h.status, 0);
  assert.match(h.stdout, /Exit 0 the report was produced/);
});
