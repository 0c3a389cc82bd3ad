// scope report --store reads a fleet gate's chain and the fleet's stored operations without the
// gate key, through the real binary: a report signs nothing, so an auditor's copy of a home
// (gate.pub and gate-id, the key kept elsewhere) serves.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { renameSync, writeFileSync } from 'node:fs';
import type { ScopeReport } from '../../src/scope/report.js';
import { cloakpipe, tempDir } from '../helpers/cli.js';
import { pgSkip } from '../store/postgres/pg.js';
import { freshDatabase, initGate, sql } from '../helpers/fleet.js';

const MANIFEST = {
  version: 1,
  release: 'order-agent@keyless',
  tools: { create_order: { effect: 'write', operation_id: 'idempotency_key', arguments: { idempotency_key: { type: 'string' } } } },
  effects: { order_create: { description: 'an order is committed', paths: [{ id: 'gateway', kind: 'agent', route: { via: 'gate', tool: 'create_order' }, mediator: { type: 'gate' } }] } },
};

test('scope report --store needs no gate key: the chain and the stored operations are read as they are', pgSkip, async () => {
  const url = await freshDatabase();
  const home = initGate(url, 'gate-a');
  await sql(url, `INSERT INTO cloakpipe.operations (id, fingerprint, tool, state, attempts, note, owner, created_at, updated_at)
    VALUES ('K-1', $1, 'create_order', 'unknown', 1, 'timeout', NULL, '2026-11-30T08:00:00.000Z', '2026-11-30T08:00:00.000Z')`, ['sha256:' + 'e'.repeat(64)]);
  renameSync(join(home, 'gate.key'), join(home, '..', 'gate.key.apart'));
  const manifest = join(tempDir('cp-scope-keyless-'), 'manifest.json');
  writeFileSync(manifest, JSON.stringify(MANIFEST));
  const r = cloakpipe(['scope', 'report', '--manifest', manifest, '--json', '--home', home, '--store', url], { timeout: 120_000 });
  assert.equal(r.status, 0, r.stdout + r.stderr);
  const report = JSON.parse(r.stdout) as ScopeReport;
  assert.equal(report.ledger?.stored_outcomes, 1, 'the fleet\'s stored operation was read');
});
