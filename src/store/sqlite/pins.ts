// Tool-definition pins in operations.db (shared by every gate on the home).
import type { Db } from './db.js';
import type { PinRow, PinsPort } from '../ports.js';

export class SqlitePins implements PinsPort {
  private readonly stmts;

  constructor(db: Db, s: string) {
    this.stmts = {
      get: db.prepare(`SELECT * FROM ${s}.pins WHERE release = ? AND tool = ?`),
      list: db.prepare(`SELECT * FROM ${s}.pins ORDER BY release, tool`),
      insert: db.prepare(`INSERT INTO ${s}.pins (release, tool, digest, observed, pinned_at) VALUES (?, ?, ?, NULL, ?)`),
      observe: db.prepare(`UPDATE ${s}.pins SET observed = ? WHERE release = ? AND tool = ?`),
      promote: db.prepare(`UPDATE ${s}.pins SET digest = observed, observed = NULL, pinned_at = ? WHERE release = ? AND tool = ? AND observed IS NOT NULL`),
    };
  }

  get(release: string, tool: string): PinRow | null {
    return (this.stmts.get.get(release, tool) as PinRow | undefined) ?? null;
  }

  list(): PinRow[] {
    return this.stmts.list.all() as PinRow[];
  }

  insert(release: string, tool: string, digest: string, now: number): void {
    this.stmts.insert.run(release, tool, digest, now);
  }

  setObserved(release: string, tool: string, observed: string | null): void {
    this.stmts.observe.run(observed, release, tool);
  }

  promote(release: string, tool: string, now: number): boolean {
    return this.stmts.promote.run(now, release, tool).changes === 1;
  }
}
