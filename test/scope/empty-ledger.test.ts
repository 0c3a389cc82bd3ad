// scope report on a ledger that holds no entry (a home no gate has run in yet, or a fleet gate
// registered but never started), through the real binary: the ledger is reported empty, never
// as verified nor as a failed verification, exit 0, and no claim rests on it (ADR 087).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { writeFileSync } from 'node:fs';
import type { ScopeReport } from '../../src/scope/report.js';
import { cloakpipe, makeHome, tempDir } from '../helpers/cli.js';
import { pgSkip } from '../store/postgres/pg.js';
import { freshDatabase, initGate } from '../helpers/fleet.js';

const MANIFEST = {
  version: 1,
  release: 'order-agent@empty',
  tools: { create_order: { effect: 'write', operation_id: 'idempotency_key', arguments: { sku: { type: 'string' }, idempotency_key: { type: 'string' } } } },
  effects: {
    order_create: {
      description: 'an order is committed',
      paths: [{ id: 'gateway', kind: 'agent', route: { via: 'gate', tool: 'create_order' }, mediator: { type: 'gate' } }],
    },
  },
};

function manifestFile(): string {
  const p = join(tempDir('cp-scope-empty-'), 'manifest.json');
  writeFileSync(p, JSON.stringify(MANIFEST));
  return p;
}

function assertEmpty(where: string[]) {
  const manifest = manifestFile();
  const json = cloakpipe(['scope', 'report', '--manifest', manifest, '--json', ...where], { timeout: 120_000 });
  assert.equal(json.status, 0, json.stdout + json.stderr);
  const r = JSON.parse(json.stdout) as ScopeReport;
  assert.equal(r.ledger?.entries, 0);
  assert.equal(r.ledger?.empty, true);
  assert.equal(r.ledger?.verified, false, 'an empty ledger is never reported verified');
  assert.equal(r.ledger?.broken, null, 'nor as a failed verification');
  const auth = r.effects[0].claims.authorization;
  assert.equal(auth.status, 'not_established');
  assert.match(auth.reasons.join('\n'), /the ledger holds no entry/);
  const text = cloakpipe(['scope', 'report', '--manifest', manifest, ...where], { timeout: 120_000 });
  assert.equal(text.status, 0, text.stdout + text.stderr);
  const line = text.stdout.split('\n').find((l) => l.startsWith('ledger'));
  assert.match(line ?? '', /: 0 entries, 0 decisions, empty \(no gate has recorded in it yet; a ledger whose every entry was deleted reads the same\): nothing to verify/);
  assert.doesNotMatch(text.stdout, /FAILED verification|chain and signatures verified/);
}

test('scope report on a home no gate has run in: the ledger is empty, not a failed verification; exit 0', () => {
  assertEmpty(['--home', makeHome()]);
});

test('scope report on a fleet gate registered but never started: its chain is empty, exit 0', pgSkip, async () => {
  const url = await freshDatabase();
  assertEmpty(['--home', initGate(url, 'gate-new'), '--store', url]);
});
