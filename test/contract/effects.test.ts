// The effects: section is validated strictly, and the manifest loader refuses a bad one like any
// manifest error (the gate does not start).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { buildManifest, loadManifest, ManifestError } from '../../src/contract/manifest.js';
import { effectsErrors, parseEffects } from '../../src/contract/effects.js';
import { ROOT, cloakpipe, tempDir, writeFiles } from '../helpers/cli.js';

const TOOLS = ['create_order', 'lookup_customer'];
const gatePath = { id: 'gateway', kind: 'agent', route: { via: 'gate', tool: 'create_order' }, mediator: { type: 'gate' } };
const effect = (paths: unknown[], extra: object = {}) => ({ order_create: { description: 'an order is committed', paths, ...extra } });

test('a valid section has no errors and parses in manifest order', () => {
  const raw = {
    ...effect([
      gatePath,
      { id: 'direct', kind: 'agent', route: { via: 'network', endpoint: 'orders.internal:443' }, mediator: { type: 'confinement', protection: 'network' } },
      { id: 'drop', kind: 'agent', route: { via: 'file', path: '/export', consumer: 'importer' }, mediator: { type: 'confinement', protection: 'read_only_root' } },
      { id: 'backoffice', kind: 'deployment', route: { via: 'database', target: 'orders' }, mediator: { type: 'external', control: 'db grants' } },
      { id: 'cron', kind: 'deployment', route: { via: 'process', command: 'reorder.sh' }, mediator: { type: 'none' } },
    ], { completeness: { assessed_by: 'security', assessed_at: '2026-11-18', basis: ['TM-31'] } }),
    refund: { description: 'a refund', paths: [{ id: 'svc', kind: 'deployment', route: { via: 'service', target: 'billing' }, mediator: { type: 'none' } }] },
  };
  assert.deepEqual(effectsErrors(raw, TOOLS), []);
  const parsed = parseEffects(raw, TOOLS);
  assert.deepEqual(parsed.map((e) => e.name), ['order_create', 'refund']);
  assert.equal(parsed[0].paths.length, 5);
  assert.equal(parsed[0].completeness?.assessed_by, 'security');
});

const cases: Array<[string, unknown, RegExp]> = [
  ['not a mapping', [], /effects: must be a mapping/],
  ['empty', {}, /declares no effect/],
  ['unknown effect key', effect([gatePath], { owner: 'x' }), /effects\.order_create: unknown key "owner"/],
  ['no description', { order_create: { paths: [gatePath] } }, /order_create\.description/],
  ['no paths', effect([]), /paths: must be a non-empty list/],
  ['unknown path key', effect([{ ...gatePath, weight: 1 }]), /paths\[0\]: unknown key "weight"/],
  ['bad kind', effect([{ ...gatePath, kind: 'vendor' }]), /paths\[0\]\.kind: must be agent or deployment/],
  ['bad via', effect([{ ...gatePath, route: { via: 'carrier-pigeon' } }]), /route\.via: must be one of/],
  ['route key of another via', effect([{ ...gatePath, route: { via: 'gate', tool: 'create_order', endpoint: 'x' } }]), /unknown key "endpoint"/],
  ['gate route through an undeclared tool', effect([{ ...gatePath, route: { via: 'gate', tool: 'delete_everything' } }]), /names undeclared tool "delete_everything"/],
  ['network route without endpoint', effect([{ id: 'n', kind: 'agent', route: { via: 'network' }, mediator: { type: 'none' } }]), /a network route needs "endpoint"/],
  ['bad mediator type', effect([{ ...gatePath, mediator: { type: 'hope' } }]), /mediator\.type: must be one of/],
  ['bad protection', effect([{ id: 'n', kind: 'agent', route: { via: 'network', endpoint: 'e' }, mediator: { type: 'confinement', protection: 'firewall' } }]), /protection: must be one of/],
  ['external without control', effect([{ id: 'n', kind: 'deployment', route: { via: 'database', target: 't' }, mediator: { type: 'external' } }]), /control: must name the control/],
  ['gate route, other mediator', effect([{ ...gatePath, mediator: { type: 'none' } }]), /a gate route and a gate mediator go together/],
  ['gate mediator, other route', effect([{ id: 'n', kind: 'agent', route: { via: 'network', endpoint: 'e' }, mediator: { type: 'gate' } }]), /a gate route and a gate mediator go together/],
  ['confinement of a deployment path', effect([{ id: 'n', kind: 'deployment', route: { via: 'network', endpoint: 'e' }, mediator: { type: 'confinement', protection: 'network' } }]), /confinement mediates agent paths only/],
  ['duplicate path id', effect([gatePath, gatePath]), /duplicate path id "gateway"/],
  ['completeness without basis', effect([gatePath], { completeness: { assessed_by: 'me', assessed_at: '2026-11-18' } }), /completeness\.basis/],
  ['completeness with a bad date', effect([gatePath], { completeness: { assessed_by: 'me', assessed_at: 'last week', basis: ['x'] } }), /assessed_at: must be a date/],
  ['completeness unknown key', effect([gatePath], { completeness: { assessed_by: 'me', assessed_at: '2026-11-18', basis: ['x'], complete: true } }), /unknown key "complete"/],
];

for (const [name, raw, re] of cases)
  test(`effects error: ${name}`, () => {
    const errors = effectsErrors(raw, TOOLS);
    assert.ok(errors.some((e) => re.test(e)), `expected ${re} in ${JSON.stringify(errors)}`);
    assert.throws(() => parseEffects(raw, TOOLS));
  });

const baseDoc = {
  version: 1,
  release: 'r@1',
  tools: { create_order: { effect: 'write', arguments: { sku: { type: 'string' } } } },
};

test('the manifest loader refuses a bad effects section (start-up fails like any manifest error)', () => {
  assert.throws(() => buildManifest({ ...baseDoc, effects: effect([{ ...gatePath, kind: 'vendor' }]) }), (e: unknown) => e instanceof ManifestError && /effects\.order_create\.paths\[0\]\.kind/.test((e as Error).message));
  assert.throws(() => buildManifest({ ...baseDoc, effects: 'yes' }), ManifestError);
  assert.throws(() => buildManifest({ ...baseDoc, effects: effect([{ ...gatePath, route: { via: 'gate', tool: 'lookup_customer' } }]) }), /undeclared tool/);
  const ok = buildManifest({ ...baseDoc, effects: effect([gatePath]) });
  assert.ok(ok.manifest.effects);
  assert.ok(buildManifest(baseDoc).manifest.effects === undefined, 'the section stays optional');
});

test('the worked example manifest loads', () => {
  const m = loadManifest(join(ROOT, 'examples/scope/order-service.yaml'));
  const effects = parseEffects(m.manifest.effects, Object.keys(m.manifest.tools));
  assert.deepEqual(effects[0].paths.map((p) => [p.id, p.kind]), [
    ['gateway', 'agent'],
    ['direct-api', 'agent'],
    ['import-drop', 'agent'],
    ['backoffice', 'deployment'],
  ]);
});

test('mcp-proxy refuses to start on a bad effects section (exit 2, the problem named)', () => {
  const home = join(tempDir('cp-scope-home-'), 'home');
  assert.equal(cloakpipe(['init', '--home', home], { timeout: 180_000 }).status, 0);
  const f = writeFiles({
    'm.json': { ...baseDoc, effects: effect([{ ...gatePath, mediator: { type: 'confinement', protection: 'network' } }]) },
    'p.cedar': 'permit(principal, action, resource);\n',
    'c.json': { task: { id: 'T-1' } },
  });
  const r = cloakpipe(['mcp-proxy', '--home', home, '--manifest', f['m.json'], '--policy', f['p.cedar'], '--context', f['c.json'], '--', process.execPath, '-e', 'setInterval(() => {}, 1000)'], { input: '', timeout: 180_000 });
  assert.equal(r.status, 2, r.stderr);
  assert.match(r.stderr, /effects\.order_create\.paths\[0\]: a gate route and a gate mediator go together/);
});
