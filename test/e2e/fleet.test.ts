// A fleet: several gate processes (the real binary), each with its own home and key, on one
// PostgreSQL database (fleet.md). The support-desk upstream records every call that reaches a
// tool: the witness that a side effect ran exactly once across gates, and that a rate limit
// holds fleet-wide. The database stopped under running gates: calls are refused fail_closed and
// nothing reaches the upstream; started again, the same gate processes go on.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import pg from 'pg';
import { cloakpipe, tempDir, writeFiles } from '../helpers/cli.js';
import { arrived, call, desk, openDesk, summary, type Desk, type Outcome } from '../helpers/support-desk.js';
import { pgSkip } from '../store/postgres/pg.js';
import { freshDatabase, initGate, PG_SCRIPT as SCRIPT, sql } from '../helpers/fleet.js';
import { call as recordingCall, callFile, records, setup, startGate, type Outcome as RecordingOutcome } from '../helpers/recording-gate.js';
import { SCHEMA_VERSION } from '../../src/store/postgres/schema.js';

async function entries(url: string): Promise<{ gate_id: string; kind: string; body: string }[]> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query(`SELECT gate_id, kind, body FROM cloakpipe.entries ORDER BY gate_id, seq`)).rows;
  } finally {
    await c.end();
  }
}

/**
 * A host's retry of a call the gate failed closed. Under a CPU-starved machine a fleet's store
 * transactions can pass their time bound, and the gate then refuses `fail_closed` with nothing
 * forwarded and nothing recorded; a host retries such a call. The claims below (exactly once,
 * exactly N) must hold across those retries too.
 */
async function callRetrying(g: Parameters<typeof call>[0], name: string, args: Record<string, unknown>): Promise<Outcome> {
  for (let attempt = 1; ; attempt++) {
    const r = await call(g, name, args, undefined, 60_000);
    if (r.ok || r.reason !== 'fail_closed' || attempt === 8) return r;
    await new Promise((done) => setTimeout(done, 50 * attempt));
  }
}

const ALLOW_ALL = `@id("desk")
permit (principal, action == Action::"call_tool", resource);
`;

test('init from several gates at once migrates once and registers each gate; a password in --store is refused', pgSkip, async () => {
  const url = await freshDatabase();
  const homes = Array.from({ length: 4 }, () => join(tempDir('cloakpipe-fleet-'), 'home'));
  const { cloakpipeAsync } = await import('../helpers/cli.js');
  const rs = await Promise.all(homes.map((h, i) => cloakpipeAsync(['init', '--home', h, '--store', url, '--gate-id', `g${i}`])));
  for (const r of rs) assert.equal(r.status, 0, r.stderr);
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  const gates = (await c.query('SELECT gate_id FROM cloakpipe.gates ORDER BY gate_id')).rows.map((r) => r.gate_id);
  const versions = (await c.query('SELECT version FROM cloakpipe.migrations')).rows.map((r) => r.version);
  await c.end();
  assert.deepEqual(gates, ['g0', 'g1', 'g2', 'g3']);
  assert.deepEqual(versions.sort((a, b) => a - b), Array.from({ length: SCHEMA_VERSION }, (_, i) => i + 1), 'each migration applied once');
  // A second home cannot take a registered name with another key.
  const other = cloakpipe(['init', '--home', join(tempDir('cloakpipe-fleet-'), 'home'), '--store', url, '--gate-id', 'g1']);
  assert.equal(other.status, 2);
  assert.match(other.stderr, /already registered with another key/);
  const withPassword = new URL(url);
  withPassword.password = 'hunter2';
  const pw = cloakpipe(['init', '--home', join(tempDir('cloakpipe-fleet-'), 'home'), '--store', withPassword.toString(), '--gate-id', 'g9']);
  assert.equal(pw.status, 2);
  assert.match(pw.stderr, /PGPASSWORD/);
  assert.ok(!pw.stderr.includes('hunter2'));
});

test('three gates, one database, overlapping operation ids: every side effect runs exactly once', pgSkip, async () => {
  const url = await freshDatabase();
  const d = desk({ policy: ALLOW_ALL, contexts: { t: { task: { id: 'T-fleet' } } } });
  const homes = ['a', 'b', 'c'].map((n) => initGate(url, `gate-${n}`));
  const gates = await Promise.all(homes.map((home) => openDesk({ ...d, home }, 't', ['--store', url])));
  const KEYS = 12;
  const ROUNDS = 3;
  let results: Outcome[];
  try {
    results = await Promise.all(
      Array.from({ length: KEYS * ROUNDS * gates.length }, (_, i) => {
        const key = `op-${i % KEYS}`;
        return callRetrying(gates[i % gates.length], 'send_email', { to: 'ada@example.com', body: 'your refund', idempotency_key: key });
      }),
    );
  } finally {
    await Promise.all(gates.map((g) => g.close()));
  }
  const sent = arrived(d, 'send_email');
  const perKey = new Map<string, number>();
  for (const r of sent) perKey.set(String(r.arguments.idempotency_key), (perKey.get(String(r.arguments.idempotency_key)) ?? 0) + 1);
  const tally = new Map<string, number>();
  for (const r of results) tally.set(summary(r).slice(0, 120), (tally.get(summary(r).slice(0, 120)) ?? 0) + 1);
  // Why a call failed closed is on the gates' stderr (the store's reason, never a value).
  const why = [...new Set(gates.flatMap((g) => g.stderr().split('\n').filter((l) => /fail_closed|store/.test(l))))].slice(0, 5).join('\n');
  assert.equal(sent.length, KEYS, `each key ran once: ${JSON.stringify([...perKey])}; outcomes ${JSON.stringify([...tally])}\n${why}`);
  for (const [k, n] of perKey) assert.equal(n, 1, k);
  for (const r of results) if (!r.ok) assert.match(summary(r), /^reconcile_before_retry:/, summary(r));
  assert.ok(new Set(sent.map((r) => r.pid)).size >= 1);
  // Each gate appended to its own chain.
  const e = await entries(url);
  assert.deepEqual([...new Set(e.map((x) => x.gate_id))].sort(), ['gate-a', 'gate-b', 'gate-c']);
  assert.equal(e.filter((x) => x.kind === 'decision').length, KEYS * ROUNDS * gates.length);
});

test('a Cedar limit of 100 per minute across four gates, 50 concurrent calls each: exactly 100 allowed', pgSkip, async () => {
  const LIMIT = 100;
  const GATES = 4;
  const PER_GATE = 50;
  const url = await freshDatabase();
  const d = desk({
    policy: `${ALLOW_ALL}
@id("lookup-limit")
forbid (principal, action == Action::"call_tool", resource == Tool::"lookup_customer")
when { context.calls.minute >= ${LIMIT} };
`,
    contexts: { t: { task: { id: 'T-limit' } } },
  });
  const homes = Array.from({ length: GATES }, (_, i) => initGate(url, `gate-${i}`));
  const gates = await Promise.all(homes.map((home) => openDesk({ ...d, home }, 't', ['--store', url])));
  let results: Outcome[];
  try {
    results = await Promise.all(
      Array.from({ length: GATES * PER_GATE }, (_, i) => callRetrying(gates[i % GATES], 'lookup_customer', { customer_id: `C${String(i).padStart(6, '0')}` })),
    );
  } finally {
    await Promise.all(gates.map((g) => g.close()));
  }
  assert.equal(results.filter((r) => r.ok).length, LIMIT, results.map(summary).join('\n'));
  for (const r of results) if (!r.ok) assert.equal(summary(r), 'policy_denied: denied by lookup-limit');
  assert.equal(arrived(d, 'lookup_customer').length, LIMIT);
});

test('the database stopped under a running gate: calls fail closed, nothing is forwarded; started again, the same gate goes on', pgSkip, async () => {
  // Its own cluster, so stopping it disturbs no other test.
  const dir = tempDir('cloakpipe-fleet-pg-');
  const base = execFileSync('bash', [SCRIPT, 'start', dir], { encoding: 'utf8' }).trim();
  try {
    const url = await freshDatabase(base);
    const d: Desk = desk({ policy: ALLOW_ALL, contexts: { t: { task: { id: 'T-down' } } } });
    const home = initGate(url, 'gate-down');
    const g = await openDesk({ ...d, home }, 't', ['--store', url]);
    try {
      assert.equal((await call(g, 'lookup_customer', { customer_id: 'C000001' })).ok, true);
      execFileSync('bash', [SCRIPT, 'stop', dir]);
      const down = await call(g, 'send_email', { to: 'ada@example.com', idempotency_key: 'while-down' }, undefined, 60_000);
      assert.equal(summary(down).split(':')[0], 'fail_closed', summary(down));
      const down2 = await call(g, 'lookup_customer', { customer_id: 'C000002' }, undefined, 60_000);
      assert.equal(summary(down2).split(':')[0], 'fail_closed');
      assert.deepEqual(arrived(d).map((r) => r.arguments.customer_id ?? r.arguments.idempotency_key), ['C000001'], 'nothing forwarded while down');
      execFileSync('bash', [SCRIPT, 'start', dir]);
      const back = await call(g, 'send_email', { to: 'ada@example.com', idempotency_key: 'after' }, undefined, 60_000);
      assert.equal(back.ok, true, summary(back));
      assert.match(g.stderr(), /fail_closed/);
    } finally {
      await g.close();
    }
    assert.deepEqual(arrived(d).map((r) => r.arguments.customer_id ?? r.arguments.idempotency_key), ['C000001', 'after']);
  } finally {
    execFileSync('bash', [SCRIPT, 'stop', dir]);
  }
});

test("another host's pending operation stays pending when a gate starts: a retry is reconcile_before_retry", pgSkip, async () => {
  const url = await freshDatabase();
  const d = desk({ policy: ALLOW_ALL, contexts: { t: { task: { id: 'T-pending' } } } });
  const home = initGate(url, 'gate-late');
  const args = { to: 'ada@example.com', idempotency_key: 'op-elsewhere' };
  const f = cloakpipe(['fingerprint', '--call', writeFiles({ 'call.json': { tool: 'send_email', arguments: args } })['call.json'], '--context', d.contexts.t]);
  assert.equal(f.status, 0, f.stderr);
  const fp = f.stdout.trim();
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  // A gate on another machine began this operation and is (as far as this host can tell) running.
  await c.query(
    `INSERT INTO cloakpipe.operations (id, fingerprint, tool, state, attempts, note, owner, created_at, updated_at)
     VALUES ('op-elsewhere', $1, 'send_email', 'pending', 1, 'begin', 'gate-host-elsewhere.example/4242/abcdef', '2026-11-30T08:00:00.000Z', '2026-11-30T08:00:00.000Z')`,
    [fp],
  );
  const g = await openDesk({ ...d, home }, 't', ['--store', url]);
  let r: Outcome;
  try {
    r = await call(g, 'send_email', args, undefined, 60_000);
  } finally {
    await g.close();
  }
  const state = (await c.query(`SELECT state FROM cloakpipe.operations WHERE id = 'op-elsewhere'`)).rows[0].state;
  await c.end();
  assert.equal(state, 'pending');
  assert.match(summary(r), /^reconcile_before_retry:/);
  assert.equal(arrived(d, 'send_email').length, 0);
});

test('one approval receipt presented to three gates at once: used exactly once fleet-wide', pgSkip, async () => {
  const url = await freshDatabase();
  const s = setup();
  const homes = ['a', 'b', 'c'].map((n) => initGate(url, `gate-${n}`));
  const gates = await Promise.all(homes.map((home) => startGate({ ...s, home }, { flags: ['--store', url], delayMs: 20 })));
  const RECEIPTS = 6;
  const receipts = Array.from({ length: RECEIPTS }, (_, i) => {
    const args = { to: 'ada@example.com', body: `refund ${i}` };
    const r = cloakpipe(['approve', '--key', s.approverKey, '--call', callFile(s, 'send_email', args), '--context', s.context, '--yes']);
    assert.equal(r.status, 0, r.stderr);
    return { args, receipt: JSON.parse(r.stdout) as Record<string, unknown> };
  });
  let outcomes: { i: number; o: RecordingOutcome }[];
  try {
    // Every receipt to every gate twice, each time as another operation: only the receipt can stop a second run.
    outcomes = await Promise.all(
      receipts.flatMap(({ args, receipt }, i) =>
        [0, 1, 2, 3, 4, 5].map(async (k) => ({
          i,
          o: await recordingCall(gates[k % 3], 'send_email', args, { 'cloakpipe/approval': receipt, 'cloakpipe/operation_id': `r${i}-try${k}` }, 60_000),
        })),
      ),
    );
  } finally {
    await Promise.all(gates.map((g) => g.close()));
  }
  const sent = records(s).filter((r) => r.tool === 'send_email');
  assert.equal(sent.length, RECEIPTS, 'each approved call ran once');
  for (let i = 0; i < RECEIPTS; i++) {
    const mine = outcomes.filter((x) => x.i === i).map((x) => x.o);
    assert.equal(mine.filter((o) => o.ok).length, 1, `receipt ${i}: ${JSON.stringify(mine)}`);
    for (const o of mine) if (!o.ok) assert.match(`${o.reason}: ${o.detail}`, /^approval_invalid: already_used/, JSON.stringify(o));
    assert.equal(sent.filter((r) => r.arguments.body === `refund ${i}`).length, 1);
  }
  const used = await sql(url, 'SELECT receipt_id FROM cloakpipe.used_receipts');
  assert.equal(used.length, RECEIPTS);
  const v = cloakpipe(['verify', '--store', url]);
  assert.equal(v.status, 0, v.stdout + v.stderr);
  assert.equal((v.stdout.match(/ledger verified/g) ?? []).length, 3, v.stdout);
});
