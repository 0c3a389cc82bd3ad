// Tool-definition pins (product.md section 9): the first `tools/list` answer (or the manifest's
// `pins`) fixes each declared tool's definition by digest. A server that later changes a
// definition (new description, wider schema: a "rug pull") has its calls to that tool refused
// until an operator reviews and accepts the new definition.
import type { Db } from '../store/sqlite.js';

export interface PinRow {
  release: string;
  tool: string;
  digest: string;
  /** The last definition seen that differs from the pin, awaiting review; null when none. */
  observed: string | null;
  pinned_at: number;
}

export class PinStore {
  private readonly getStmt;

  constructor(
    private readonly db: Db,
    private readonly schema: string,
  ) {
    this.getStmt = db.prepare(`SELECT * FROM ${schema}.pins WHERE release = ? AND tool = ?`);
  }

  static initSchema(db: Db, schema: string) {
    db.exec(`CREATE TABLE IF NOT EXISTS ${schema}.pins (
      release TEXT NOT NULL,
      tool TEXT NOT NULL,
      digest TEXT NOT NULL,
      observed TEXT,
      pinned_at INTEGER NOT NULL,
      PRIMARY KEY (release, tool)
    ) STRICT`);
  }

  get(release: string, tool: string): PinRow | null {
    return (this.getStmt.get(release, tool) as PinRow | undefined) ?? null;
  }

  pin(release: string, tool: string, digest: string, now: number) {
    this.db.prepare(`INSERT INTO ${this.schema}.pins (release, tool, digest, observed, pinned_at) VALUES (?, ?, ?, NULL, ?)`).run(release, tool, digest, now);
  }

  setObserved(release: string, tool: string, observed: string | null) {
    this.db.prepare(`UPDATE ${this.schema}.pins SET observed = ? WHERE release = ? AND tool = ?`).run(observed, release, tool);
  }

  list(): PinRow[] {
    return this.db.prepare(`SELECT * FROM ${this.schema}.pins ORDER BY release, tool`).all() as PinRow[];
  }

  /** Take the observed definition as the new pin. Returns the rows it changed. */
  accept(filter: { release?: string; tools?: string[] }, now: number): { release: string; tool: string; from: string; to: string }[] {
    const changed: { release: string; tool: string; from: string; to: string }[] = [];
    for (const row of this.list()) {
      if (row.observed === null) continue;
      if (filter.release !== undefined && row.release !== filter.release) continue;
      if (filter.tools && !filter.tools.includes(row.tool)) continue;
      this.db.prepare(`UPDATE ${this.schema}.pins SET digest = observed, observed = NULL, pinned_at = ? WHERE release = ? AND tool = ?`).run(now, row.release, row.tool);
      changed.push({ release: row.release, tool: row.tool, from: row.digest, to: row.observed });
    }
    return changed;
  }
}
