// The PostgreSQL store: the fleet's shared database (fleet.md, ADR 016). One connection per gate
// runs the gate's transactions one batch at a time: jobs queued in the same turn of the event
// loop share one PostgreSQL transaction (group commit, as on SQLite), each job in a savepoint so
// that one that throws rolls back alone. A job runs over a unit of work (unit.ts): its reads are
// fetched (and locked) in the transaction, its writes buffered and written there, and COMMIT
// (synchronous_commit = on) returns before any job resolves: durable before forwarded.
// Under contention (unique violation, a compare-and-set that missed, serialization failure,
// deadlock) the whole transaction is rolled back and every job of it runs again on what the
// database holds now: never half-applied. The database unreachable, failing or slower than
// `timeoutMs`: every job of the batch rejects (the gate refuses fail_closed) and the connection is
// dropped; the next batch connects again, so the gate recovers without a restart.
import pg from 'pg';
import { StoreError, type LedgerSnapshot, type OperationsPort, type Store } from '../ports.js';
import { GATE_SETTINGS } from '../target.js';
import { Conflict, Suspend, Unit, UnitSlot, type Carry } from './unit.js';
import { PgAnchors, PgLedger, PgOperations, PgPins, PgRates, PgReceipts } from './ports.js';
import { GATE_KEY_INDEX, gateKey, ident, migrate, schemaVersion, SCHEMA_VERSION } from './schema.js';
import { createPublicKey } from 'node:crypto';
import { keyIdOf } from '../../core/signer.js';
import { PgApprovalRequests } from './approvals.js';

export interface PostgresOptions {
  /** postgres://USER@HOST:PORT/DB; the password comes from PGPASSWORD or ~/.pgpass (pg reads both). */
  url: string;
  /** This gate's name: its chain and key in the shared database. */
  gateId: string;
  /** The PostgreSQL schema holding the tables (default `cloakpipe`). */
  schema?: string;
  /** A transaction (connect, every statement, commit) slower than this fails closed. */
  timeoutMs?: number;
  maxBatch?: number;
}

export interface PostgresStore extends Store {
  readonly gateId: string;
  /** The public key (SPKI PEM) registered for this gate. */
  readonly registeredKey: string;
  /** Closes the connection and waits for it. */
  end(): Promise<void>;
}

/** SQLSTATEs retried: unique violation, serialization failure, deadlock. */
const RETRY = new Set(['23505', '40001', '40P01']);
const MAX_ATTEMPTS = 12;

function retryable(e: unknown): boolean {
  return e instanceof Conflict || RETRY.has((e as { code?: string })?.code ?? '');
}

/** What a failure says, without any value it may carry (SQL errors can quote row values). */
function describe(e: unknown): string {
  const code = (e as { code?: string })?.code;
  if (e instanceof StoreError) return e.message;
  if (code) return `PostgreSQL error ${code}`;
  return e instanceof Error ? e.message.split('\n')[0].slice(0, 200) : 'PostgreSQL failed';
}

interface Job {
  run: () => unknown;
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
}

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown } | { ok: 'deferred' };
const DEFERRED: Outcome = { ok: 'deferred' };

class Timeout extends Error {}

/** `p`, or a Timeout once `deadline` (Date.now()) passed. */
function within<T>(p: Promise<T>, deadline: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Timeout('the PostgreSQL store did not answer in time')), Math.max(1, deadline - Date.now()));
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

/** The URL without what the gate sets itself: pg would let the URL's value win (see ../target.ts). */
function withoutGateSettings(url: string): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return url;
  }
  for (const k of GATE_SETTINGS) u.searchParams.delete(k);
  return u.toString();
}

export function connectionConfig(url: string, timeoutMs: number): pg.ClientConfig {
  return {
    connectionString: withoutGateSettings(url),
    connectionTimeoutMillis: timeoutMs,
    keepAlive: true,
    // Every statement and lock wait bounded; a gate frozen inside a transaction does not hold
    // its locks (and the fleet) for longer than this.
    statement_timeout: timeoutMs,
    lock_timeout: timeoutMs,
    idle_in_transaction_session_timeout: Math.max(2 * timeoutMs, 1000),
    options: '-c synchronous_commit=on',
  };
}

class Transactor {
  private queue: Job[] = [];
  /** Work that rides in the next transaction (ADR 017): a call's result entry and settlement. */
  private later: Job[] = [];
  private laterTimer: NodeJS.Timeout | null = null;
  private running = false;
  private client: pg.Client | null = null;
  private closed = false;
  /** Facts the ports pass from a job that succeeded to the later jobs of its transaction. */
  readonly carries: Carry[] = [];

  constructor(
    private readonly url: string,
    private readonly slot: UnitSlot,
    private readonly timeoutMs: number,
    private readonly maxBatch: number,
    private readonly laterMs = 2,
    /** Every transaction READ ONLY (a reader's: a write, or a lock asked for, is an error). */
    private readonly readOnly = false,
  ) {}

  run<T>(fn: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      if (this.closed) return reject(new StoreError('the PostgreSQL store is closed'));
      this.queue.push({ run: fn, resolve: resolve as (v: unknown) => void, reject });
      this.start();
    });
  }

  /**
   * Like run, but the job waits for the next transaction (at most laterMs) and runs first in it,
   * so a call's result and settlement share the next decision's COMMIT (ADR 017, ADR 030).
   */
  runLater<T>(fn: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      if (this.closed) return reject(new StoreError('the PostgreSQL store is closed'));
      this.later.push({ run: fn, resolve: resolve as (v: unknown) => void, reject });
      if (this.laterTimer === null && !this.running) this.laterTimer = setTimeout(() => this.start(), this.laterMs);
    });
  }

  private start(): void {
    if (this.laterTimer !== null) {
      clearTimeout(this.laterTimer);
      this.laterTimer = null;
    }
    if (!this.running) {
      this.running = true;
      setImmediate(() => void this.drain());
    }
  }

  private async drain(): Promise<void> {
    for (;;) {
      // Deferred work first: a call decided in this batch sees the settlements that came before it.
      if (this.later.length > 0) {
        this.queue = this.later.concat(this.queue);
        this.later = [];
      }
      if (this.queue.length === 0) break;
      const batch = this.queue.splice(0, this.maxBatch);
      await this.runBatch(batch);
    }
    this.running = false;
  }

  private async connect(): Promise<pg.Client> {
    if (this.client) return this.client;
    const c = new pg.Client(connectionConfig(this.url, this.timeoutMs));
    c.on('error', () => {
      if (this.client === c) this.client = null; // the server went away: the next batch reconnects
    });
    await c.connect();
    this.client = c;
    return c;
  }

  private drop(c: pg.Client | null): void {
    if (!c) return;
    if (this.client === c) this.client = null;
    c.end().catch(() => undefined);
  }

  private async runBatch(batch: Job[]): Promise<void> {
    const deadline = Date.now() + this.timeoutMs;
    for (let attempt = 1; ; attempt++) {
      let client: pg.Client | null = null;
      let timer: NodeJS.Timeout | undefined;
      let givenUp = false;
      try {
        const timedOut = new Promise<never>((_, reject) => {
          timer = setTimeout(() => {
            givenUp = true;
            reject(new Timeout(`the PostgreSQL store did not answer within ${this.timeoutMs} ms`));
          }, Math.max(1, deadline - Date.now()));
        });
        timedOut.catch(() => undefined);
        const outcomes = await Promise.race([
          (async () => {
            client = await this.connect();
            // A connection that came after the batch was refused runs none of its jobs (they
            // would commit what the caller was told failed); the next batch uses it.
            if (givenUp) throw new Timeout('connected after the batch was refused');
            return this.attempt(client, batch);
          })(),
          timedOut,
        ]);
        clearTimeout(timer);
        const deferred: Job[] = [];
        batch.forEach((job, i) => {
          const o = outcomes[i];
          if (o.ok === 'deferred') deferred.push(job);
          else if (o.ok) job.resolve(o.value);
          else job.reject(o.error);
        });
        this.queue.unshift(...deferred);
        return;
      } catch (e) {
        clearTimeout(timer);
        const c = client as pg.Client | null;
        if (retryable(e) && attempt < MAX_ATTEMPTS && Date.now() < deadline) {
          try {
            // Bounded too: a server that stopped answering holds a ROLLBACK as long as a query.
            if (c) await within(c.query('ROLLBACK'), deadline);
          } catch {
            this.drop(c);
          }
          await new Promise((r) => setTimeout(r, Math.random() * 2 * attempt));
          continue;
        }
        // Not known to be rolled back (timeout, connection lost, COMMIT unanswered): the
        // connection is dropped, which ends its transaction on the server.
        this.drop(c ?? this.client);
        const err = new StoreError(`${retryable(e) ? 'store contention persisted' : 'store unavailable'}: ${describe(e)}`);
        for (const job of batch) job.reject(err);
        return;
      }
    }
  }

  /**
   * One transaction: every job of the batch, each in a savepoint, then COMMIT. Only a job that
   * holds no locks yet may wait for one: once an earlier job of the batch holds locks, a later
   * job that finds a row locked by another gate is rolled back to its savepoint and deferred to
   * the next transaction (where it comes first), so two gates' batches never wait for each other
   * in a cycle. A job whose write lost a race (unique key, compare-and-set) runs again at once on
   * what the winner committed.
   */
  private async attempt(c: pg.Client, batch: Job[]): Promise<Outcome[]> {
    const outcomes: Outcome[] = [];
    let holding = false;
    // BEGIN goes with the first job's savepoint, and the savepoint of the job that succeeded last
    // is released with the next one: no round trip of their own (COMMIT releases the last one).
    let begin = true;
    let release = false;
    const carried = new Map<string, unknown>();
    for (const job of batch) {
      for (let tries = 1; ; tries++) {
        const before = begin ? (this.readOnly ? 'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; ' : 'BEGIN ISOLATION LEVEL READ COMMITTED; ') : release ? 'RELEASE SAVEPOINT job; ' : '';
        await c.query(`${before}SAVEPOINT job; SET LOCAL lock_timeout = '${holding ? 1 : this.timeoutMs}ms'`);
        begin = false;
        release = false;
        let out: Outcome;
        const unit = new Unit(carried);
        try {
          out = await this.runJob(c, job, unit);
        } catch (e) {
          const code = (e as { code?: string }).code;
          if (holding && code === '55P03') {
            await c.query('ROLLBACK TO SAVEPOINT job');
            outcomes.push(DEFERRED);
            break;
          }
          if ((e instanceof Conflict || code === '23505') && tries < MAX_ATTEMPTS) {
            await c.query('ROLLBACK TO SAVEPOINT job');
            continue;
          }
          throw e;
        }
        if (!out.ok) await c.query('ROLLBACK TO SAVEPOINT job');
        else {
          release = true;
          holding = true;
          // Only from a job that succeeded: a rolled-back savepoint takes its rows and locks with it.
          for (const carry of this.carries) carry(unit, carried);
        }
        outcomes.push(out);
        break;
      }
    }
    await c.query('COMMIT');
    return outcomes;
  }

  /** Runs a job's function over `unit` until it no longer asks for facts, then writes what it wrote. */
  private async runJob(c: pg.Client, job: Job, unit: Unit): Promise<Outcome> {
    for (let runs = 0; ; runs++) {
      if (runs > 10_000) throw new StoreError('a store job kept reading new facts');
      unit.newRun();
      let out: Outcome;
      this.slot.current = unit;
      try {
        out = { ok: true, value: job.run() };
      } catch (error) {
        out = { ok: false, error };
      } finally {
        this.slot.current = null;
      }
      if (unit.missing.length > 0) {
        const m = unit.missing[0];
        try {
          unit.facts.set(m.key, await m.fetch(c));
          continue;
        } catch (e) {
          if (!(e instanceof StoreError)) throw e;
          return { ok: false, error: e }; // e.g. this gate is not registered: this job fails alone
        }
      }
      if (!out.ok && out.error instanceof Suspend) return { ok: false, error: new StoreError('a store read was suspended and never fetched') };
      if (!out.ok) return out;
      for (const w of unit.writes) await w(c);
      return out;
    }
  }

  async end(): Promise<void> {
    this.closed = true;
    if (this.later.length > 0) this.start(); // what was queued for later still commits
    while (this.running) await new Promise((r) => setTimeout(r, 5));
    const c = this.client;
    this.client = null;
    if (c) await c.end().catch(() => undefined);
  }
}

function portsOver(url: string, gateId: string, registeredKey: string, schema: string, timeoutMs: number, maxBatch: number): PostgresStore {
  const s = ident(schema);
  const slot = new UnitSlot();
  const tx = new Transactor(url, slot, timeoutMs, maxBatch);
  const ledger = new PgLedger(slot, s, gateId);
  const rates = new PgRates(slot, s);
  const pins = new PgPins(slot, s);
  for (const port of [ledger, rates, pins]) tx.carries.push((done, carried) => port.carry(done, carried));
  return {
    gateId,
    registeredKey,
    ledger,
    operations: new PgOperations(slot, s),
    receipts: new PgReceipts(slot, s),
    approvalRequests: new PgApprovalRequests(slot, s),
    rates,
    pins,
    anchors: new PgAnchors(slot, s, gateId),
    transact: (fn) => tx.run(fn),
    transactLater: (fn) => tx.runLater(fn),
    assertIntact: () => undefined, // the gate's registration is checked in every transaction that reads its chain
    close: () => void tx.end(),
    end: () => tx.end(),
  };
}

async function withClient<T>(url: string, timeoutMs: number, fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client(connectionConfig(url, timeoutMs));
  c.on('error', () => undefined);
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end().catch(() => undefined);
  }
}

/** A key registered under another gate id (ADR 106): each gate signs with a key of its own. */
export class KeyTakenError extends StoreError {
  constructor(publicKeyPem: string, readonly gateId: string) {
    super(
      `the gate key ${keyIdOf(createPublicKey(publicKeyPem))} is gate ${JSON.stringify(gateId)}'s already in this store: each gate signs with a key of its own (a new object= in the token, or init without --key)`,
    );
  }
}

/** `init`: create or migrate the schema and register this gate's public key (PEM) under its name. */
export async function initPostgresStore(opts: PostgresOptions & { publicKeyPem: string }): Promise<{ version: number }> {
  const schema = opts.schema ?? 'cloakpipe';
  return withClient(opts.url, opts.timeoutMs ?? 10_000, async (c) => {
    const version = await migrate(c, schema);
    const s = ident(schema);
    let r: pg.QueryResult<{ public_key: string }>;
    await c.query('BEGIN');
    try {
      // Names that differ only in case are one file in a case-insensitive folder (export --all
      // writes NAME.jsonl): one gate's export replaced the other's. The lock makes check and insert one.
      await c.query(`LOCK TABLE ${s}.gates IN SHARE ROW EXCLUSIVE MODE`);
      const twin = await c.query<{ gate_id: string }>(`SELECT gate_id FROM ${s}.gates WHERE lower(gate_id) = lower($1) AND gate_id <> $1 ORDER BY gate_id LIMIT 1`, [opts.gateId]);
      if (twin.rows[0])
        throw new StoreError(
          `gate ${JSON.stringify(opts.gateId)} differs from the registered gate ${JSON.stringify(twin.rows[0].gate_id)} only in case, one file name in a case-insensitive folder: pick another --gate-id`,
        );
      r = await c.query<{ public_key: string }>(`INSERT INTO ${s}.gates (gate_id, public_key) VALUES ($1, $2) ON CONFLICT (gate_id) DO NOTHING RETURNING public_key`, [
        opts.gateId,
        opts.publicKeyPem,
      ]);
      await c.query('COMMIT');
    } catch (e) {
      await c.query('ROLLBACK').catch(() => undefined);
      const { code, constraint } = e as { code?: string; constraint?: string };
      if (code !== '23505' || constraint !== GATE_KEY_INDEX) throw e;
      const owner = await c.query<{ gate_id: string }>(`SELECT gate_id FROM ${s}.gates WHERE ${gateKey('public_key')} = ${gateKey('$1')}`, [opts.publicKeyPem]);
      throw new KeyTakenError(opts.publicKeyPem, owner.rows[0]?.gate_id ?? '?');
    }
    if (r.rowCount === 0) {
      const have = await c.query<{ public_key: string }>(`SELECT public_key FROM ${s}.gates WHERE gate_id = $1`, [opts.gateId]);
      if (have.rows[0]?.public_key.trim() !== opts.publicKeyPem.trim())
        throw new StoreError(`gate ${JSON.stringify(opts.gateId)} is already registered with another key: pick another --gate-id, or restore that gate's key`);
    }
    return { version };
  });
}

/** A gate's store: the schema must be at this version and the gate registered (`init`). */
export async function openPostgresStore(opts: PostgresOptions): Promise<PostgresStore> {
  const schema = opts.schema ?? 'cloakpipe';
  const timeoutMs = opts.timeoutMs ?? 5_000;
  const pem = await withClient(opts.url, timeoutMs, async (c) => {
    const v = await schemaVersion(c, schema);
    if (v === 0) throw new StoreError(`no cloakpipe schema in the PostgreSQL store (run cloakpipe init --store … --gate-id NAME)`);
    if (v !== SCHEMA_VERSION) throw new StoreError(`the PostgreSQL schema is at version ${v}, this gate needs ${SCHEMA_VERSION} (run cloakpipe init --store … to migrate)`);
    const r = await c.query<{ public_key: string }>(`SELECT public_key FROM ${ident(schema)}.gates WHERE gate_id = $1`, [opts.gateId]);
    if (r.rowCount === 0) throw new StoreError(`gate ${JSON.stringify(opts.gateId)} is not registered in the store (run cloakpipe init --store … --gate-id NAME)`);
    return r.rows[0].public_key;
  });
  return portsOver(opts.url, opts.gateId, pem, schema, timeoutMs, opts.maxBatch ?? 256);
}

/**
 * The fleet's operations, read-only (ops list and show): no gate key nor gate id, every
 * transaction READ ONLY, no row lock asked for, so a reader never waits for (nor holds up) a gate
 * deciding on a row. The schema must exist, and be one this cloakpipe knows.
 */
export async function openPostgresOperationsReader(opts: { url: string; schema?: string; timeoutMs?: number }): Promise<{ read<T>(fn: (ops: OperationsPort) => T): Promise<T>; end(): Promise<void> }> {
  const schema = opts.schema ?? 'cloakpipe';
  const timeoutMs = opts.timeoutMs ?? 5_000;
  await withClient(opts.url, timeoutMs, async (c) => {
    const v = await schemaVersion(c, schema);
    if (v === 0) throw new StoreError(`no cloakpipe schema in the PostgreSQL store (run cloakpipe init --store … --gate-id NAME)`);
  });
  const slot = new UnitSlot();
  const tx = new Transactor(opts.url, slot, timeoutMs, 1, undefined, true);
  const operations = new PgOperations(slot, ident(schema), false);
  return { read: (fn) => tx.run(() => fn(operations)), end: () => tx.end() };
}

/** Every registered gate and its public key (PEM), by name. */
export async function registeredGates(url: string, schema = 'cloakpipe', timeoutMs = 10_000): Promise<{ gate_id: string; public_key: string }[]> {
  return withClient(url, timeoutMs, async (c) => {
    await schemaVersion(c, schema); // a schema this cloakpipe does not know is not read
    return (await c.query<{ gate_id: string; public_key: string }>(`SELECT gate_id, public_key FROM ${ident(schema)}.gates ORDER BY gate_id`)).rows;
  });
}

/** Rows of a chain fetched a page at a time: a page's bodies are what the heap holds. */
const CHAIN_PAGE = 2000;
/** Anchors a page: a Rekor entry or a TSA token is kilobytes, and a page is what the heap holds. */
const ANCHOR_PAGE = 32;

/**
 * One gate's chain and anchors, read in one REPEATABLE READ snapshot (export, verify) a page at a
 * time into a copy on disk (../sqlite/chain-copy.ts), read from there: never the whole chain in
 * memory.
 */
export async function postgresLedgerSnapshot(url: string, gateId: string, schema = 'cloakpipe', timeoutMs = 30_000): Promise<LedgerSnapshot> {
  const s = ident(schema);
  const { copiedChain } = await import('../sqlite/chain-copy.js');
  return withClient(url, timeoutMs, async (c) => {
    await c.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
    async function* pages() {
      // Keyset pages in seq order, from the lowest row (even one stored below 0).
      let after: string | null = null;
      for (;;) {
        const rows: { seq: string; ts: string; kind: string; hash: string; body: string }[] = (
          await c.query(
            `SELECT seq, ts, kind, hash, body FROM ${s}.entries WHERE gate_id = $1 AND ($2::bigint IS NULL OR seq > $2::bigint) ORDER BY seq LIMIT ${CHAIN_PAGE}`,
            [gateId, after],
          )
        ).rows;
        if (rows.length === 0) return;
        yield rows.map((r) => ({ seq: BigInt(r.seq), ts: r.ts, kind: r.kind, hash: r.hash, body: r.body }));
        after = rows[rows.length - 1].seq;
      }
    }
    async function* anchors() {
      // Keyset pages in (epoch, kind) order; a page of tokens is what the heap holds.
      let after: [string, string] | null = null;
      for (;;) {
        const rows: { epoch: string; kind: string; data: string }[] = (
          await c.query(
            `SELECT epoch_seq AS epoch, kind, data FROM ${s}.anchors WHERE gate_id = $1 AND ($2::bigint IS NULL OR (epoch_seq, kind) > ($2::bigint, $3::text)) ORDER BY epoch_seq, kind LIMIT ${ANCHOR_PAGE}`,
            [gateId, after?.[0] ?? null, after?.[1] ?? null],
          )
        ).rows;
        if (rows.length === 0) return;
        yield rows.map((r) => ({ epoch: Number(r.epoch), kind: r.kind, data: r.data }));
        after = [rows[rows.length - 1].epoch, rows[rows.length - 1].kind];
      }
    }
    const snap = await copiedChain(pages(), anchors());
    try {
      await c.query('COMMIT');
    } catch (e) {
      snap.close();
      throw e;
    }
    return snap;
  });
}
