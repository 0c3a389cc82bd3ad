// The fleet's tables in one PostgreSQL schema, created by versioned migrations. Several gates may
// start (or run `init`) at once: each migration runs in a transaction that first takes a table
// lock on the migrations table (a lock on a table, not an advisory lock, so PostgreSQL-compatible
// databases that lack advisory locks serve too) and re-reads the applied versions under it.
import type pg from 'pg';
import { APPROVAL_REQUESTS, OFFERED_RECEIPTS, OPERATIONS, PINS, USED_RECEIPTS, type Table } from '../tables.js';
import { StoreError } from '../ports.js';
import { schemaProblem } from '../target.js';

/** `schema` as SQL writes it: checked (schemaProblem), then quoted, so a keyword is a name too. */
export function ident(schema: string): string {
  const problem = schemaProblem(schema);
  if (problem) throw new StoreError(`PostgreSQL schema ${JSON.stringify(schema)} ${problem}`);
  return `"${schema}"`;
}

/** A table both stores keep (../tables.ts) as PostgreSQL has it. */
function create(t: Table, s: string): string {
  const indexes = Object.entries(t.indexes ?? {}).map(([name, columns]) => `CREATE INDEX ${name} ON ${s}.${t.name} (${columns});`);
  return [`CREATE TABLE ${s}.${t.name} (${t.columns.replaceAll('INT64', 'BIGINT')}\n);`, ...indexes].join('\n');
}

/**
 * Migration n (1-based) is MIGRATIONS[n - 1]; never edit one that shipped (nor the shared tables
 * it renders), add the next.
 */
const MIGRATIONS: ((s: string) => string)[] = [
  (s) => `
    CREATE TABLE ${s}.gates (
      gate_id TEXT PRIMARY KEY,
      public_key TEXT NOT NULL,
      registered_at TIMESTAMPTZ NOT NULL DEFAULT now()
    );
    CREATE TABLE ${s}.entries (
      gate_id TEXT NOT NULL REFERENCES ${s}.gates (gate_id),
      seq BIGINT NOT NULL,
      ts TEXT NOT NULL,
      kind TEXT NOT NULL,
      hash TEXT NOT NULL,
      body TEXT NOT NULL,
      PRIMARY KEY (gate_id, seq)
    );
    CREATE INDEX entries_kind ON ${s}.entries (gate_id, kind, seq);
    CREATE TABLE ${s}.anchors (
      gate_id TEXT NOT NULL REFERENCES ${s}.gates (gate_id),
      epoch_seq BIGINT NOT NULL,
      kind TEXT NOT NULL,
      data TEXT NOT NULL,
      PRIMARY KEY (gate_id, epoch_seq, kind)
    );
    ${create(OPERATIONS, s)}
    CREATE INDEX operations_state ON ${s}.operations (state, updated_at, id);
    ${create(USED_RECEIPTS, s)}
    ${create(PINS, s)}
    -- One row per task key: a decision that counts a task's windows locks it (FOR UPDATE), so
    -- two gates cannot both see 99 of 100 and both allow.
    CREATE TABLE ${s}.rate_tasks (task_key TEXT PRIMARY KEY);
    CREATE TABLE ${s}.rate_calls (
      task_key TEXT NOT NULL,
      tool TEXT NOT NULL,
      at_ms BIGINT NOT NULL
    );
    CREATE INDEX rate_calls_task ON ${s}.rate_calls (task_key, at_ms, tool);
    CREATE INDEX rate_calls_at ON ${s}.rate_calls (at_ms);
  `,
  // The approval inbox (inbox.md, ADR 033): requests waiting for a person, receipts signed for them.
  (s) => `
    ${create(APPROVAL_REQUESTS, s)}
    ${create(OFFERED_RECEIPTS, s)}
  `,
  // The fleet's one clock for rate windows (ADR 060): the database's, in ms since the epoch.
  (s) => `
    CREATE FUNCTION ${s}.clock_ms() RETURNS BIGINT LANGUAGE sql VOLATILE
      AS $$ SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint $$;
  `,
  // One key, one gate (ADR 106, ADR 110): init's read-then-register let two racing inits both
  // register one key. PEMs are compared without their line breaks (one Ed25519 key has one DER).
  (s) => `CREATE UNIQUE INDEX ${GATE_KEY_INDEX} ON ${s}.gates ((${gateKey('public_key')}));`,
];

/** The unique index on a registered gate key. */
export const GATE_KEY_INDEX = 'gates_public_key';
/** A registered key as the index compares it: its PEM without line breaks (SQL over `pem`). */
export const gateKey = (pem: string) => `regexp_replace(${pem}, '\\s', '', 'g')`;

/**
 * What must hold before migration n runs, or StoreError (the schema stays where it was). A store
 * whose gates already share a key (registered before migration 4 made it impossible) is named:
 * which of them is the key's own gate is the operator's call, not a migration's.
 */
const BEFORE: Record<number, (c: pg.ClientBase, s: string) => Promise<void>> = {
  4: async (c, s) => {
    const { rows } = await c.query<{ ids: string[] }>(
      `SELECT array_agg(gate_id ORDER BY gate_id) AS ids FROM ${s}.gates GROUP BY ${gateKey('public_key')} HAVING count(*) > 1 ORDER BY 1`,
    );
    if (rows.length > 0)
      throw new StoreError(
        `gates ${rows.map((r) => r.ids.map((id) => JSON.stringify(id)).join(' and ')).join('; ')} are registered with one key: each gate signs with a key of its own (ADR 106). ` +
          `Delete the registration (and chain) of each gate that is not the key's, then run init again; the schema was left at version 3`,
      );
  },
};

export const SCHEMA_VERSION = MIGRATIONS.length;

// Concurrent CREATE … IF NOT EXISTS of one name: a unique violation in the catalog (23505), the
// schema or table found after all (42P06, 42P07), or the table's row type found between the two
// checks PostgreSQL makes (42710, "type … already exists"); serialization failure and deadlock.
const RACE = new Set(['23505', '42P06', '42P07', '42710', '40001', '40P01']);

/** Creates or migrates the schema; safe to run from several processes at once. Returns the version. */
export async function migrate(client: pg.ClientBase, schema: string): Promise<number> {
  const s = ident(schema);
  for (let attempt = 0; ; attempt++) {
    try {
      // CREATE … IF NOT EXISTS can still race in the catalog (RACE above): retried.
      await client.query(`CREATE SCHEMA IF NOT EXISTS ${s}`);
      await client.query(`CREATE TABLE IF NOT EXISTS ${s}.migrations (version INTEGER PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())`);
      break;
    } catch (e) {
      if (attempt >= 5 || !RACE.has((e as { code?: string }).code ?? '')) throw e;
    }
  }
  await client.query('BEGIN');
  try {
    await client.query(`LOCK TABLE ${s}.migrations IN SHARE ROW EXCLUSIVE MODE`);
    const have = await appliedVersion(client, s);
    for (let v = have + 1; v <= MIGRATIONS.length; v++) {
      await BEFORE[v]?.(client, s);
      await client.query(MIGRATIONS[v - 1](s));
      await client.query(`INSERT INTO ${s}.migrations (version) VALUES ($1)`, [v]);
    }
    await client.query('COMMIT');
    return MIGRATIONS.length;
  } catch (e) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw e;
  }
}

/**
 * The schema's version, or 0 when it was never created (a gate refuses to start on it). A schema
 * newer than this cloakpipe, or whose applied migrations are not 1..n, is refused (StoreError):
 * it may mean something else by the same tables, so nothing reads, writes or migrates it.
 */
export async function schemaVersion(client: pg.ClientBase, schema: string): Promise<number> {
  const s = ident(schema);
  const { rows } = await client.query<{ t: string | null }>(`SELECT to_regclass($1) AS t`, [`${s}.migrations`]);
  if (rows[0].t === null) return 0;
  return appliedVersion(client, s);
}

async function appliedVersion(client: pg.ClientBase, s: string): Promise<number> {
  const applied = (await client.query<{ version: number }>(`SELECT version FROM ${s}.migrations ORDER BY version`)).rows.map((r) => r.version);
  const v = applied.length > 0 ? applied[applied.length - 1] : 0;
  if (v > SCHEMA_VERSION) throw new StoreError(`the PostgreSQL schema is at version ${v}, newer than this cloakpipe (${SCHEMA_VERSION}): upgrade cloakpipe; the store was neither read nor changed`);
  if (!applied.every((x, i) => x === i + 1))
    throw new StoreError(`the PostgreSQL schema's migrations (${applied.join(', ')}) are not a version this cloakpipe knows: the store was neither read nor changed`);
  return v;
}
