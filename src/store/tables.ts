// The tables both stores keep alike (operations, receipts, pins, the approval inbox), described
// once: `sqlite/schema.ts` and the PostgreSQL migrations (`postgres/schema.ts`) render them in
// their own dialect. Tables that differ (the ledger's, keyed by gate in PostgreSQL; rate windows)
// stay with their store. `INT64` is a 64-bit integer: INTEGER in SQLite, BIGINT in PostgreSQL.
// What shipped is not edited here (a PostgreSQL migration renders from it): a later change is a
// new PostgreSQL migration and a new SQLite step.

export interface Table {
  name: string;
  /** Column and table constraints, as SQL both dialects read. */
  columns: string;
  /** Index name → its columns, when both stores index alike. */
  indexes?: Record<string, string>;
}

export const OPERATIONS: Table = {
  name: 'operations',
  columns: `
    id          TEXT PRIMARY KEY,
    fingerprint TEXT NOT NULL,
    tool        TEXT NOT NULL,
    state       TEXT NOT NULL CHECK (state IN ('pending', 'succeeded', 'failed', 'unknown')),
    attempts    INTEGER NOT NULL CHECK (attempts >= 1),
    result      TEXT,
    error       TEXT,
    note        TEXT NOT NULL,
    owner       TEXT,
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL`,
};

export const USED_RECEIPTS: Table = {
  name: 'used_receipts',
  columns: `
    receipt_id  TEXT PRIMARY KEY,
    nonce       TEXT NOT NULL,
    approver    TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    receipt     TEXT NOT NULL,
    used_at     TEXT NOT NULL`,
};

export const PINS: Table = {
  name: 'pins',
  columns: `
    release   TEXT NOT NULL,
    tool      TEXT NOT NULL,
    digest    TEXT NOT NULL,
    observed  TEXT,
    pinned_at INT64 NOT NULL,
    PRIMARY KEY (release, tool)`,
};

/** The approval inbox (inbox.md, ADR 033): requests waiting for a person, receipts signed for them. */
export const APPROVAL_REQUESTS: Table = {
  name: 'approval_requests',
  columns: `
    id          TEXT PRIMARY KEY,
    fingerprint TEXT NOT NULL UNIQUE,
    tool        TEXT NOT NULL,
    call_json   TEXT NOT NULL,
    task        TEXT,
    label       TEXT NOT NULL,
    entry       INT64 NOT NULL,
    gate        TEXT,
    rule_json   TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    expires_at  TEXT NOT NULL`,
  indexes: { approval_requests_created: 'created_at' },
};

export const OFFERED_RECEIPTS: Table = {
  name: 'offered_receipts',
  columns: `
    receipt_id  TEXT PRIMARY KEY,
    fingerprint TEXT NOT NULL,
    receipt     TEXT NOT NULL,
    expires_at  TEXT NOT NULL`,
  indexes: { offered_receipts_fingerprint: 'fingerprint' },
};
