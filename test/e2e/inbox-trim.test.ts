// The gate's own clean-up of approval requests (ADR 058), through the real binary with no inbox
// running: an expired request is deleted by the next approval-gated call, its argument values
// gone from the database's bytes too (operations.db and its -wal, the gate closed: SQLite then
// holds them in no page, free ones included); past MAX_OPEN_REQUESTS the oldest request goes,
// every call is still refused approval_required, and the evicted call can still be approved with
// `cloakpipe approve`. The same on a PostgreSQL store (its own SQL), read there with SQL.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import Database from 'better-sqlite3';
import { MAX_OPEN_REQUESTS } from '../../src/approvals/requests.js';
import { cloakpipe } from '../helpers/cli.js';
import { call, records, setup, startGate, type Outcome, type RunningGate, type Setup } from '../helpers/recording-gate.js';
import { freshDatabase, initGate, sql } from '../helpers/fleet.js';
import { pgSkip } from '../store/postgres/pg.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Row {
  id: string;
  fingerprint: string;
  call_json: string;
}

/** Where a test reads the requests the gate keeps: the home's operations.db, or the PostgreSQL store. */
interface Where {
  flags: string[];
  home(s: Setup): string;
  rows(): Promise<Row[]>;
}

function sqlite(s: Setup): Where {
  return {
    flags: [],
    home: () => s.home,
    rows: async () => {
      // Read directly, not through the gate's code: a second, read-only connection on the file.
      const db = new Database(join(s.home, 'operations.db'), { readonly: true, fileMustExist: true });
      try {
        return db.prepare('SELECT id, fingerprint, call_json FROM approval_requests').all() as Row[];
      } finally {
        db.close();
      }
    },
  };
}

async function postgres(): Promise<(s: Setup) => Where> {
  const url = await freshDatabase();
  const home = initGate(url, 'gate-trim');
  return () => ({
    flags: ['--store', url],
    home: () => home,
    rows: () => sql<Row>(url, 'SELECT id, fingerprint, call_json FROM cloakpipe.approval_requests'),
  });
}

/** Every file of the home, byte for byte (the databases and their -wal and -shm files). */
function homeBytesHold(home: string, needle: string): string[] {
  const found: string[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const p = join(dir, name);
      if (statSync(p).isDirectory()) walk(p);
      else if (readFileSync(p).includes(needle)) found.push(p);
    }
  };
  walk(home);
  return found;
}

function refused(o: Outcome, what: string): string {
  assert.ok(!o.ok, `${what}: ${JSON.stringify(o)}`);
  assert.equal(o.reason, 'approval_required', `${what}: ${o.detail}`);
  return String(o.data.fingerprint);
}

async function expiredGoes(s: Setup, where: Where, bytes: boolean): Promise<void> {
  const g = await startGate({ ...s, home: where.home(s) }, { flags: ['--request-ttl', '1s', ...where.flags] });
  const canary = `trim-canary-${randomBytes(6).toString('hex')}`;
  try {
    // Long enough to be written to overflow pages too, not only inside a table page.
    const fp = refused(await call(g, 'send_email', { to: `${canary}@example.com`, body: `${canary} ${'x'.repeat(3800)}` }), 'the canary call');
    const before = await where.rows();
    assert.deepEqual(
      before.map((r) => r.fingerprint),
      [fp],
    );
    assert.ok(before[0].call_json.includes(canary), 'the request holds the argument values');
    if (bytes) {
      const db = join(where.home(s), 'operations.db');
      const held = [db, `${db}-wal`].filter((p) => existsSync(p) && readFileSync(p).includes(canary));
      assert.ok(held.length > 0, 'the byte search finds the canary while its request is kept');
    }
    await sleep(1300); // past --request-ttl
    const later = refused(await call(g, 'send_email', { to: 'later@example.com' }), 'the next approval-gated call');
    const after = await where.rows();
    assert.deepEqual(
      after.map((r) => r.fingerprint),
      [later],
      'the expired request is gone, no inbox running',
    );
    assert.ok(!after.some((r) => r.call_json.includes(canary)));
  } finally {
    await g.close();
  }
  if (bytes) assert.deepEqual(homeBytesHold(where.home(s), canary), [], 'no byte of the canary left in any file of the home');
}

async function boundHolds(s: Setup, where: Where, bytes: boolean): Promise<void> {
  const g: RunningGate = await startGate({ ...s, home: where.home(s) }, { flags: where.flags });
  const canary = `bound-canary-${randomBytes(6).toString('hex')}`;
  const oldestArgs = { to: `${canary}@example.com`, body: canary };
  try {
    const oldest = refused(await call(g, 'send_email', oldestArgs), 'the oldest call');
    await sleep(5); // the oldest by its time, not only by the order of ids
    const newer: string[] = [];
    for (let i = 0; i < MAX_OPEN_REQUESTS; i += 25) {
      const batch = await Promise.all(Array.from({ length: 25 }, (_, j) => call(g, 'send_email', { to: `n-${i + j}@example.com` })));
      batch.forEach((o, j) => newer.push(refused(o, `call ${i + j} past the bound`)));
    }
    const rows = await where.rows();
    assert.equal(rows.length, MAX_OPEN_REQUESTS, `at most ${MAX_OPEN_REQUESTS} requests kept`);
    assert.ok(!rows.some((r) => r.fingerprint === oldest), 'the oldest went');
    assert.deepEqual(new Set(rows.map((r) => r.fingerprint)), new Set(newer), 'every newer one is kept');
    assert.ok(!rows.some((r) => r.call_json.includes(canary)));

    // Its call is still refused, and a person can still approve it outside the page.
    const a = cloakpipe(['approve', '--key', s.approverKey, '--fingerprint', oldest, '--home', where.home(s), '--json']);
    assert.equal(a.status, 0, a.stderr);
    const ok = await call(g, 'send_email', oldestArgs);
    assert.ok(ok.ok, `approved with cloakpipe approve: ${JSON.stringify(ok)}`);
    assert.equal(records(s).filter((r) => r.arguments.to === oldestArgs.to).length, 1);
  } finally {
    await g.close();
  }
  if (bytes) assert.deepEqual(homeBytesHold(where.home(s), canary), [], 'no byte of the evicted canary left in any file of the home');
}

test('SQLite, no inbox running: an expired request is deleted by the next approval-gated call, its values gone from the files', async () => {
  const s = setup();
  await expiredGoes(s, sqlite(s), true);
});

test(`SQLite: past ${MAX_OPEN_REQUESTS} open requests the oldest goes; every call is still refused approval_required and approve still works`, async () => {
  const s = setup();
  await boundHolds(s, sqlite(s), true);
});

test('PostgreSQL, no inbox running: an expired request is deleted by the next approval-gated call', pgSkip, async () => {
  const s = setup();
  await expiredGoes(s, (await postgres())(s), false);
});

test(`PostgreSQL: past ${MAX_OPEN_REQUESTS} open requests the oldest goes; every call is still refused approval_required and approve still works`, pgSkip, async () => {
  const s = setup();
  await boundHolds(s, (await postgres())(s), false);
});
