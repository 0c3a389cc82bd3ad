// Evidence files: the scope format is strict; the confinement suite's own file is read by a
// tolerant adapter that takes only the counts it can name and says what it could not use.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseEvidence, EvidenceError, type ConfinementRecord } from '../../src/scope/evidence.js';
import { scopeEvidence, suiteEvidence } from './fixtures.js';

const D = 'sha256:' + '1'.repeat(64);
const receipt = { type: 'receipt', tool: 'create_order', observer: 'audit', operation: D };

test('scope evidence v1: receipts, confinement records and attestations are read', () => {
  const f = parseEvidence(
    scopeEvidence([
      receipt,
      { type: 'confinement', protection: 'network', baseline: { runs: 2, count: 0 }, mutation: { runs: 1, count: 4, admission_refused: true }, observers: ['tcp'] },
      { type: 'mediation', effect: 'order_create', path: 'backoffice', attested_by: 'dba', basis: 'grants review' },
    ]),
    'e.json',
    D,
  );
  assert.equal(f.shape, 'scope-v1');
  assert.deepEqual(f.records.map((r) => r.type), ['receipt', 'confinement', 'mediation']);
  const c = f.records[1] as ConfinementRecord;
  assert.deepEqual(c.mutation, { runs: 1, count: 4, admission_refused: true });
});

const bad: Array<[string, unknown, RegExp]> = [
  ['not an object', [], /must be a JSON object/],
  ['unknown format', { format: 'something-else', version: 1 }, /unknown format/],
  ['wrong version', { ...scopeEvidence([]), version: 2 }, /version: must be 1/],
  ['unknown top key', { ...scopeEvidence([]), signed: true }, /unknown key "signed"/],
  ['no producer', { format: 'cloakpipe-scope-evidence', version: 1, records: [] }, /producer/],
  ['unknown record type', scopeEvidence([{ type: 'rumour' }]), /records\[0\]\.type/],
  ['unknown record key', scopeEvidence([{ ...receipt, payload: 'x' }]), /unknown key "payload"/],
  ['bad digest', scopeEvidence([{ ...receipt, operation: 'K-1' }]), /operation: must be a sha256/],
  ['receipt naming nothing', scopeEvidence([{ type: 'receipt', tool: 't', observer: 'o' }]), /names the operation or the fingerprint/],
  ['bad protection', scopeEvidence([{ type: 'confinement', protection: 'firewall', baseline: { runs: 1, count: 0 } }]), /protection/],
  ['negative count', scopeEvidence([{ type: 'confinement', protection: 'network', baseline: { runs: 1, count: -1 } }]), /count/],
  ['zero baseline runs', scopeEvidence([{ type: 'confinement', protection: 'network', baseline: { runs: 0, count: 0 } }]), /runs/],
  ['mediation without basis', scopeEvidence([{ type: 'mediation', effect: 'e', path: 'p', attested_by: 'x' }]), /missing "basis"/],
];
for (const [name, doc, re] of bad)
  test(`scope evidence refused: ${name}`, () => {
    assert.throws(() => parseEvidence(doc, 'e.json', D), (e: unknown) => e instanceof EvidenceError && re.test((e as Error).message));
  });

test('confinement suite file (its current shape): baseline and mutation counts per protection', () => {
  const f = parseEvidence(suiteEvidence(), 'confine.json', D);
  assert.equal(f.shape, 'confinement-suite');
  const by = Object.fromEntries(f.records.map((r) => [(r as ConfinementRecord).protection, r as ConfinementRecord]));
  assert.deepEqual(by.network.baseline, { runs: 2, count: 0 });
  assert.deepEqual(by.network.mutation, { runs: 1, count: 3, admission_refused: true });
  assert.deepEqual(by.read_only_root.mutation, { runs: 1, count: 1, admission_refused: true });
  assert.deepEqual(by.log_driver.mutation, { runs: 1, count: 2, admission_refused: true });
  // The current file does not say which tool is the denied sink: not guessed, said so.
  assert.equal(by.sink_ceiling, undefined);
  assert.ok(f.notes.some((n) => /sink_ceiling: the file does not say which tool is the denied sink/.test(n)));
  assert.ok(f.notes.some((n) => /not observations of a route/.test(n)));
});

test('confinement suite file: the denied sink counts when the file names it; leaks and accepted admission are kept', () => {
  const f = parseEvidence(suiteEvidence({ deniedSinks: ['post_public'], baselineNetwork: 2, admissionRefused: false }), 'c.json', D);
  const by = Object.fromEntries(f.records.map((r) => [(r as ConfinementRecord).protection, r as ConfinementRecord]));
  assert.deepEqual(by.sink_ceiling.baseline, { runs: 2, count: 0 });
  assert.deepEqual(by.sink_ceiling.mutation, { runs: 1, count: 1, admission_refused: null });
  assert.deepEqual(by.network.baseline, { runs: 2, count: 2 });
  assert.equal(by.network.mutation?.admission_refused, false);
});

test('confinement suite file: tolerant of cases it cannot read, and of an explicit observers map', () => {
  const doc = {
    format: 'cloakpipe-confine-evidence',
    version: 1,
    cases: [
      null,
      { name: 'baseline-1', observers: { network: { count: 0 }, read_only_root: { count: 0 }, log_driver: { count: 0 }, sink_ceiling: { count: 0 } } },
      { name: 'baseline-2', tcp: 'unreadable' },
      { name: 'mutation-network-bypassed', observers: { network: { count: 5 } } },
      { name: 'mutation-log driver-bypassed' },
      { name: 'crash', exit: 1 },
    ],
  };
  const f = parseEvidence(doc, 'c.json', D);
  const by = Object.fromEntries(f.records.map((r) => [(r as ConfinementRecord).protection, r as ConfinementRecord]));
  assert.deepEqual(by.network.baseline, { runs: 1, count: 0 });
  assert.deepEqual(by.network.mutation, { runs: 1, count: 5, admission_refused: null });
  assert.equal(by.log_driver.mutation, null);
  assert.ok(f.notes.some((n) => /mutation-log driver-bypassed: no count/.test(n)));
  assert.ok(f.notes.some((n) => /network: 1 baseline case\(s\) without a count/.test(n)));
  assert.throws(() => parseEvidence({ format: 'cloakpipe-confine-evidence', version: 1 }, 'c.json', D), EvidenceError);
});
