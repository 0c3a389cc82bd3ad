// The operator's commands on a fleet's shared PostgreSQL store (fleet.md): ops, pins, ledger
// show/export/anchor/prove/checkpoint, verify and scope report with --store, through the real
// binary, after two gates (the real binary too) ran calls. Then an attacker with write access to
// the database edits, deletes, moves and re-keys rows: verify --store names the chain and the
// entry each time.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cloakpipe, tempDir } from '../helpers/cli.js';
import { arrived, call, desk, DESK_MANIFEST, openDesk, type Desk } from '../helpers/support-desk.js';
import { recordingUpstream } from '../helpers/gate.js';
import { pgSkip } from '../store/postgres/pg.js';
import { freshDatabase, initGate, sql } from '../helpers/fleet.js';
import { httpClient, startHttpGate } from '../helpers/http-gate.js';

const ALLOW_ALL = `@id("desk")
permit (principal, action == Action::"call_tool", resource);
`;

const MANIFEST_WITH_EFFECTS = `${DESK_MANIFEST}effects:
  email_sent:
    description: an email leaves the desk
    paths:
      - { id: gateway, kind: agent, route: { via: gate, tool: send_email }, mediator: { type: gate } }
`;

interface Fleet {
  url: string;
  d: Desk;
  a: string;
  b: string;
}

/** Two gates on one database: gate-a sends two emails, gate-b looks a customer up; both stop. */
async function fleet(): Promise<Fleet> {
  const url = await freshDatabase();
  const d = desk({ policy: ALLOW_ALL, manifest: MANIFEST_WITH_EFFECTS, contexts: { t: { task: { id: 'T-cli' } } } });
  const a = initGate(url, 'gate-a');
  const b = initGate(url, 'gate-b');
  const ga = await openDesk({ ...d, home: a }, 't', ['--store', url]);
  const gb = await openDesk({ ...d, home: b }, 't', ['--store', url]);
  try {
    for (const key of ['k1', 'k2']) assert.equal((await call(ga, 'send_email', { to: 'ada@example.com', idempotency_key: key })).ok, true);
    assert.equal((await call(gb, 'lookup_customer', { customer_id: 'C000001' })).ok, true);
  } finally {
    await Promise.all([ga.close(), gb.close()]);
  }
  return { url, d, a, b };
}

const run = (args: string[]) => cloakpipe(args, { timeout: 120_000 });
const jsonLines = (out: string) => out.split('\n').filter(Boolean).map((l) => JSON.parse(l));

test('ops, pins and ledger commands on the shared store: any gate sees the fleet\'s operations and pins, writes only its own chain', pgSkip, async () => {
  const { url, a, b } = await fleet();
  // gate-b lists the operation gate-a ran.
  const list = run(['ops', 'list', '--json', '--home', b, '--store', url]);
  assert.equal(list.status, 0, list.stderr);
  assert.deepEqual(jsonLines(list.stdout).map((o) => [o.id, o.state]), [['k1', 'succeeded'], ['k2', 'succeeded']]);
  const show = run(['ops', 'show', 'k1', '--json', '--home', b, '--store', url]);
  assert.equal(show.status, 0, show.stderr);
  assert.equal(JSON.parse(show.stdout).state, 'succeeded');
  // CLOAKPIPE_STORE stands for --store.
  const viaEnv = cloakpipe(['ops', 'show', 'k2', '--json', '--home', b], { env: { ...process.env, CLOAKPIPE_STORE: url } });
  assert.equal(viaEnv.status, 0, viaEnv.stderr);
  assert.equal(JSON.parse(viaEnv.stdout).state, 'succeeded');

  // An operation left unknown (a gate died mid-call) is reconciled from another gate; the
  // operator entry goes into that gate's chain.
  const fp = JSON.parse(show.stdout).fingerprint;
  await sql(url, `INSERT INTO cloakpipe.operations (id, fingerprint, tool, state, attempts, note, owner, created_at, updated_at)
    VALUES ('k-lost', $1, 'send_email', 'unknown', 1, 'startup', NULL, '2026-11-30T08:00:00.000Z', '2026-11-30T08:00:00.000Z')`, [fp]);
  const rec = run(['ops', 'reconcile', 'k-lost', '--outcome', 'not-executed', '--json', '--home', b, '--store', url]);
  assert.equal(rec.status, 0, rec.stderr);
  assert.equal(JSON.parse(rec.stdout).state, 'failed');
  assert.equal((await sql(url, `SELECT state FROM cloakpipe.operations WHERE id = 'k-lost'`))[0].state, 'failed');
  const operatorIn = async (gate: string) => (await sql(url, `SELECT count(*)::int AS n FROM cloakpipe.entries WHERE gate_id = $1 AND kind = 'operator'`, [gate]))[0].n;
  assert.equal(await operatorIn('gate-b'), 1);
  assert.equal(await operatorIn('gate-a'), 0);

  // A changed tool definition awaiting review is accepted once, for every gate.
  await sql(url, `INSERT INTO cloakpipe.pins (release, tool, digest, observed, pinned_at) VALUES ('support-desk-e2e@1', 'zz_tool', $1, $2, 0)
    ON CONFLICT (release, tool) DO UPDATE SET observed = EXCLUDED.observed`, ['sha256:' + 'a'.repeat(64), 'sha256:' + 'b'.repeat(64)]);
  const pins = run(['pins', 'list', '--json', '--home', a, '--store', url]);
  assert.equal(pins.status, 0, pins.stderr);
  assert.equal(JSON.parse(pins.stdout).find((p: { tool: string }) => p.tool === 'zz_tool').observed, 'sha256:' + 'b'.repeat(64));
  const acc = run(['pins', 'accept', '--tool', 'zz_tool', '--json', '--home', a, '--store', url]);
  assert.equal(acc.status, 0, acc.stderr);
  const row = (await sql(url, `SELECT digest, observed FROM cloakpipe.pins WHERE tool = 'zz_tool'`))[0];
  assert.deepEqual(row, { digest: 'sha256:' + 'b'.repeat(64), observed: null });
  assert.equal(await operatorIn('gate-a'), 1);

  // ledger show: this home's gate by default, another with --gate; never a mix.
  const showA = run(['ledger', 'show', '--json', '--home', a, '--store', url]);
  assert.equal(showA.status, 0, showA.stderr);
  const entriesA = jsonLines(showA.stdout);
  assert.deepEqual(entriesA.map((e) => e.seq), [...entriesA.keys()]);
  assert.equal(entriesA.filter((e) => e.kind === 'decision').length, 2);
  const showB = run(['ledger', 'show', '--json', '--home', a, '--store', url, '--gate', 'gate-b']);
  assert.equal(showB.status, 0, showB.stderr);
  assert.deepEqual(jsonLines(showB.stdout).filter((e) => e.kind === 'decision').map((e) => e.tool), ['lookup_customer']);
  const nobody = run(['ledger', 'show', '--home', a, '--store', url, '--gate', 'gate-z']);
  assert.equal(nobody.status, 2);
  assert.match(nobody.stderr, /no gate "gate-z" is registered/);
  const sqliteGate = cloakpipe(['ledger', 'show', '--home', a, '--gate', 'gate-b'], { env: { ...process.env, CLOAKPIPE_STORE: '' } });
  assert.equal(sqliteGate.status, 2);
  assert.match(sqliteGate.stderr, /--gate and --all name chains in a shared store/);
});

test('ledger export --gate and --all, anchor, prove, checkpoint and verify --store: every chain checks against its own key', pgSkip, async () => {
  const { url, a, b } = await fleet();
  const out = tempDir('cloakpipe-fleet-export-');
  // One gate's chain, exported from another gate's host, verifies against that gate's own key.
  const one = run(['ledger', 'export', '--home', a, '--store', url, '--gate', 'gate-b', '--out', join(out, 'b.jsonl')]);
  assert.equal(one.status, 0, one.stderr);
  const vb = run(['verify', '--ledger', join(out, 'b.jsonl'), '--public-key', join(b, 'gate.pub')]);
  assert.equal(vb.status, 0, vb.stdout + vb.stderr);
  const wrongKey = run(['verify', '--ledger', join(out, 'b.jsonl'), '--public-key', join(a, 'gate.pub')]);
  assert.equal(wrongKey.status, 1, wrongKey.stdout);
  // --all: one file per gate, each naming its gate.
  const all = run(['ledger', 'export', '--all', '--json', '--store', url, '--out', join(out, 'all')]);
  assert.equal(all.status, 0, all.stderr);
  assert.deepEqual(jsonLines(all.stdout).map((r) => r.gate), ['gate-a', 'gate-b']);
  for (const [gate, home] of [['gate-a', a], ['gate-b', b]]) {
    const file = join(out, 'all', `${gate}.jsonl`);
    assert.equal(JSON.parse(readFileSync(file, 'utf8').split('\n')[0]).gate_id, gate);
    const v = run(['verify', '--ledger', file, '--public-key', join(home, 'gate.pub')]);
    assert.equal(v.status, 0, `${gate}: ${v.stdout}${v.stderr}`);
  }
  const allSqlite = cloakpipe(['ledger', 'export', '--all', '--home', a, '--out', join(out, 'x')], { env: { ...process.env, CLOAKPIPE_STORE: '' } });
  assert.equal(allSqlite.status, 2);

  // Seal and anchor an epoch of gate-a's chain, prove one of its entries, check the proof alone.
  const anchor = run(['ledger', 'anchor', '--json', '--home', a, '--store', url]);
  assert.equal(anchor.status, 0, anchor.stderr);
  const epoch = JSON.parse(anchor.stdout).epoch;
  assert.equal(epoch.first, 0);
  const proofFile = join(out, 'proof.json');
  const prove = run(['ledger', 'prove', '1', '--out', proofFile, '--home', a, '--store', url]);
  assert.equal(prove.status, 0, prove.stdout + prove.stderr);
  const vp = run(['verify', '--proof', proofFile, '--public-key', join(a, 'gate.pub')]);
  assert.equal(vp.status, 0, vp.stdout + vp.stderr);

  // A checkpoint of gate-a's chain, held apart, checked later against the store.
  const cp = join(out, 'a.checkpoint');
  const c = run(['ledger', 'checkpoint', '--home', a, '--store', url, '--out', cp]);
  assert.equal(c.status, 0, c.stdout + c.stderr);
  const vc = run(['verify', '--store', url, '--gate', 'gate-a', '--public-key', join(a, 'gate.pub'), '--checkpoint', cp]);
  assert.equal(vc.status, 0, vc.stdout + vc.stderr);
  assert.match(vc.stdout, /^gate gate-a: ledger verified: .*\n  .*\n  .*\n  checkpoints     1 held/);

  // Every chain, each against the key registered for it (and a warning that says so).
  const v = run(['verify', '--store', url]);
  assert.equal(v.status, 0, v.stdout + v.stderr);
  assert.match(v.stdout, /^gate gate-a: ledger verified/m);
  assert.match(v.stdout, /^gate gate-b: ledger verified/m);
  assert.match(v.stderr, /gate gate-a: warning: checked against the key registered for gate gate-a in the store itself/);
  const vj = run(['verify', '--store', url, '--json']);
  assert.equal(vj.status, 0);
  assert.deepEqual(JSON.parse(vj.stdout).gates.map((g: { gate: string; ok: boolean }) => [g.gate, g.ok]), [['gate-a', true], ['gate-b', true]]);
  // A home's chain in the store, against the home's own key, not the one registered in the store
  // (a warning says the home's gate.pub is beside what it checks; a key held apart silences it).
  const vh = run(['verify', '--home', b, '--store', url]);
  assert.equal(vh.status, 0, vh.stdout + vh.stderr);
  assert.doesNotMatch(vh.stderr, /registered for gate/);
  assert.match(vh.stderr, /warning: checked against the home's own gate\.pub/);
  const held = run(['verify', '--home', b, '--store', url, '--public-key', join(b, 'gate.pub')]);
  assert.equal(held.status, 0, held.stdout + held.stderr);
  assert.doesNotMatch(held.stderr, /warning/);
  const keyless = run(['verify', '--store', url, '--public-key', join(a, 'gate.pub')]);
  assert.equal(keyless.status, 2);
  assert.match(keyless.stderr, /name it with --gate NAME/);

  // The scope report reads gate-a's verified chain and the fleet's stored outcomes.
  writeFileSync(join(out, 'm.yaml'), MANIFEST_WITH_EFFECTS);
  const report = run(['scope', 'report', '--json', '--manifest', join(out, 'm.yaml'), '--home', a, '--store', url]);
  assert.equal(report.status, 0, report.stdout + report.stderr);
  assert.match(report.stdout, /gate gate-a in the shared store/);
  assert.match(report.stdout, /"allowed": 2/);
});

test('tampering in the database: an edited, deleted, moved or re-keyed row is caught by verify --store, naming the gate and the entry', pgSkip, async () => {
  const { url, a, b } = await fleet();
  const ok = run(['verify', '--store', url]);
  assert.equal(ok.status, 0, ok.stdout + ok.stderr);
  const cp = join(tempDir('cloakpipe-fleet-cp-'), 'a.checkpoint');
  assert.equal(run(['ledger', 'checkpoint', '--home', a, '--store', url, '--out', cp]).status, 0);
  const invalid = (gate: string) => {
    const r = run(['verify', '--store', url]);
    assert.equal(r.status, 1, r.stdout);
    const line = r.stdout.split('\n').find((l) => l.startsWith(`gate ${gate}: `)) ?? '';
    assert.match(line, /ledger INVALID/, r.stdout);
    return line;
  };
  const body = async (gate: string, seq: number) => (await sql(url, 'SELECT body FROM cloakpipe.entries WHERE gate_id = $1 AND seq = $2', [gate, seq]))[0].body as string;
  const setBody = (gate: string, seq: number, text: string) => sql(url, 'UPDATE cloakpipe.entries SET body = $3 WHERE gate_id = $1 AND seq = $2', [gate, seq, text]);

  // 1. An entry's body edited (the tool it names): its signature no longer holds.
  const original = await body('gate-b', 1);
  await setBody('gate-b', 1, original.replace('"lookup_customer"', '"list_orders"'));
  assert.notEqual(await body('gate-b', 1), original);
  assert.match(invalid('gate-b'), /at seq 1/);
  assert.match(run(['verify', '--store', url]).stdout, /^gate gate-a: ledger verified/m, 'the other chain still verifies');
  await setBody('gate-b', 1, original);

  // 2. An entry deleted from the middle of a chain.
  const last = (await sql(url, `SELECT max(seq)::int AS m FROM cloakpipe.entries WHERE gate_id = 'gate-a'`))[0].m as number;
  const row = (await sql(url, `SELECT * FROM cloakpipe.entries WHERE gate_id = 'gate-a' AND seq = 1`))[0];
  await sql(url, `DELETE FROM cloakpipe.entries WHERE gate_id = 'gate-a' AND seq = 1`);
  assert.match(invalid('gate-a'), /at seq 2/);
  // 3. That entry moved into another gate's chain (as its next entry).
  const nextB = (await sql(url, `SELECT max(seq)::int + 1 AS n FROM cloakpipe.entries WHERE gate_id = 'gate-b'`))[0].n as number;
  await sql(url, `INSERT INTO cloakpipe.entries (gate_id, seq, ts, kind, hash, body) VALUES ('gate-b', $1, $2, $3, $4, $5)`, [nextB, row.ts, row.kind, row.hash, row.body]);
  assert.match(invalid('gate-b'), new RegExp(`expected seq ${nextB}, found 1`));
  await sql(url, `DELETE FROM cloakpipe.entries WHERE gate_id = 'gate-b' AND seq = $1`, [nextB]);
  await sql(url, `INSERT INTO cloakpipe.entries (gate_id, seq, ts, kind, hash, body) VALUES ('gate-a', 1, $1, $2, $3, $4)`, [row.ts, row.kind, row.hash, row.body]);
  assert.equal(run(['verify', '--store', url]).status, 0, 'restored, both chains verify again');

  // 4. A chain's tail deleted: still a valid chain, but the checkpoint held apart no longer holds.
  const tail = await sql(url, `SELECT * FROM cloakpipe.entries WHERE gate_id = 'gate-a' AND seq = $1`, [last]);
  await sql(url, `DELETE FROM cloakpipe.entries WHERE gate_id = 'gate-a' AND seq = $1`, [last]);
  const held = run(['verify', '--store', url, '--gate', 'gate-a', '--public-key', join(a, 'gate.pub'), '--checkpoint', cp]);
  assert.equal(held.status, 1, held.stdout);
  assert.match(held.stdout, /^gate gate-a: ledger INVALID .*checkpoint/m);
  const t = tail[0];
  await sql(url, `INSERT INTO cloakpipe.entries (gate_id, seq, ts, kind, hash, body) VALUES ('gate-a', $1, $2, $3, $4, $5)`, [last, t.ts, t.kind, t.hash, t.body]);

  // 5. The key registered for a gate replaced by another gate's: its chain fails against it, and
  //    against the key held apart it still verifies (the rows were not touched).
  const pemA = readFileSync(join(a, 'gate.pub'), 'utf8');
  await sql(url, 'DROP INDEX cloakpipe.gates_public_key'); // one key, one gate: an attacker with write access drops it first
  await sql(url, `UPDATE cloakpipe.gates SET public_key = $1 WHERE gate_id = 'gate-b'`, [pemA]);
  assert.match(invalid('gate-b'), /at seq 0/);
  const apart = run(['verify', '--store', url, '--gate', 'gate-b', '--public-key', join(b, 'gate.pub')]);
  assert.equal(apart.status, 0, apart.stdout + apart.stderr);
});

test('the HTTP door on the shared store: two http-proxy gates, one operation id, one side effect', pgSkip, async () => {
  const url = await freshDatabase();
  const d = desk({ policy: ALLOW_ALL, contexts: { t: { task: { id: 'T-http' } } } });
  const homes = [initGate(url, 'http-a'), initGate(url, 'http-b')];
  const gates = await Promise.all(
    homes.map((home) =>
      startHttpGate({ home, manifest: d.manifest, policy: d.policy, flags: ['--store', url, '--context', d.contexts.t], ...recordingUpstream('desk', d.record) }),
    ),
  );
  try {
    const clients = await Promise.all(gates.map((g) => httpClient(g.url)));
    const results = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        clients[i % 2]
          .callTool({ name: 'send_email', arguments: { to: 'ada@example.com', idempotency_key: `h-${i % 3}` } }, undefined, { timeout: 60_000 })
          .then(
            () => 'ok',
            (e: { data?: { reason?: string } }) => e.data?.reason ?? String(e),
          ),
      ),
    );
    await Promise.all(clients.map((c) => c.close()));
    for (const r of results) assert.ok(r === 'ok' || r === 'reconcile_before_retry', r);
  } finally {
    await Promise.all(gates.map((g) => g.stop()));
  }
  const sent = arrived(d, 'send_email').map((r) => r.arguments.idempotency_key).sort();
  assert.deepEqual(sent, ['h-0', 'h-1', 'h-2'], 'each operation ran once across both doors');
  const v = run(['verify', '--store', url]);
  assert.equal(v.status, 0, v.stdout + v.stderr);
  assert.match(v.stdout, /^gate http-a: ledger verified/m);
  assert.match(v.stdout, /^gate http-b: ledger verified/m);
});
