// The store's WAL: checkpoints are rare (ADR 066: they were a lone call's p99) and the WAL file
// stays bounded, for the ledger and for the attached operations database alike.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync, statSync } from 'node:fs';
import { WAL_CHECKPOINT_PAGES } from '../../../src/store/sqlite/db.js';
import { freshStore } from '../helpers.js';
import type { SqliteStore } from '../../../src/store/sqlite/store.js';

const ROW = 'x'.repeat(40_000); // ~10 pages a commit: the threshold is crossed in ~400 commits

for (const schema of ['main', 'ops'] as const) {
  test(`${schema}: no checkpoint before ${WAL_CHECKPOINT_PAGES} WAL pages, then the WAL stops growing and the rows are in the database file`, (t) => {
    const { store, paths, dir } = freshStore();
    t.after(() => {
      store.close();
      rmSync(dir, { recursive: true, force: true }); // ~20 MB of filler
    });
    const db = (store as SqliteStore).db;
    const file = schema === 'main' ? paths.ledger : paths.operations;
    const page = db.pragma(`${schema}.page_size`, { simple: true }) as number;
    // A WAL is a 32-byte header, then frames of one page and a 24-byte frame header each.
    const walFrames = () => Math.floor((statSync(`${file}-wal`).size - 32) / (page + 24));
    db.exec(`CREATE TABLE ${schema}.filler (v TEXT)`);
    const insert = db.prepare(`INSERT INTO ${schema}.filler (v) VALUES (?)`);
    const before = statSync(file).size;
    const start = walFrames();
    insert.run(ROW);
    const perCommit = walFrames() - start; // every loop below is bounded by this count
    assert.ok(perCommit > 0, 'a commit appends to the WAL');

    // Half our threshold, twice SQLite's default of 1,000 pages: nothing is checkpointed.
    for (let i = 1; i < Math.ceil(WAL_CHECKPOINT_PAGES / 2 / perCommit); i++) insert.run(ROW);
    assert.ok(walFrames() >= WAL_CHECKPOINT_PAGES / 2, `WAL of ${walFrames()} frames`);
    assert.equal(statSync(file).size, before, 'the database file is untouched until the checkpoint');

    // As many again as the threshold: the commit that crosses it checkpoints, and the WAL is
    // then overwritten from its start instead of growing.
    for (let i = 0; i < Math.ceil(WAL_CHECKPOINT_PAGES / perCommit); i++) insert.run(ROW);
    const largest = WAL_CHECKPOINT_PAGES + perCommit;
    assert.ok(walFrames() <= largest, `WAL of ${walFrames()} frames, bounded by ${largest}`);
    assert.ok(statSync(file).size > before + (WAL_CHECKPOINT_PAGES / 2) * page, 'the checkpoint copied the rows into the database file');
  });
}
