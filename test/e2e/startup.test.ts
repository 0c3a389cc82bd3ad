// Fail closed at start-up: for each missing or broken input the gate exits 2 with a clear
// message, before it spawns the upstream (the upstream here would leave a marker file).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, rmSync, writeFileSync, chmodSync } from 'node:fs';
import { join } from 'node:path';
import { cloakpipe, makeHome, writeFiles, tempDir, PERMIT_ALL } from '../helpers/cli.js';

const GOOD = `version: 1
release: s@1
tools:
  t: { effect: read, arguments: { a: { type: string } } }
`;

function start(o: { home: string; manifest: string; policy: string; context?: string }) {
  const marker = join(tempDir(), 'spawned');
  // A shell starts in milliseconds even on a loaded machine: the marker says it was spawned.
  const upstream = ['sh', '-c', 'touch "$0"; cat >/dev/null', marker];
  const r = cloakpipe(['mcp-proxy', '--home', o.home, '--manifest', o.manifest, '--policy', o.policy, ...(o.context ? ['--context', o.context] : []), '--', ...upstream], { input: '' });
  return { ...r, spawned: existsSync(marker) };
}

const cases: [string, () => { home: string; manifest: string; policy: string; context?: string }, RegExp][] = [
  ['a missing manifest', () => ({ home: makeHome(), manifest: '/nonexistent/m.yaml', policy: writeFiles({ p: PERMIT_ALL }).p }), /cannot read manifest/],
  ['a manifest with an unknown key', () => ({ home: makeHome(), ...files(GOOD.replace('release: s@1', 'release: s@1\nallow_all: true')) }), /unknown key "allow_all"/],
  ['a manifest with an unknown rule', () => ({ home: makeHome(), ...files(GOOD.replace('type: string', 'type: string, maxlen: 3')) }), /unknown key "maxlen"/],
  ['a manifest with a bad regex', () => ({ home: makeHome(), ...files(GOOD.replace('type: string', 'type: string, pattern: "(a"')) }), /not a valid linear-time/],
  ['a manifest with a backtracking-only pattern', () => ({ home: makeHome(), ...files(GOOD.replace('type: string', 'type: string, pattern: "(a)\\\\1"')) }), /not a valid linear-time/],
  ['a manifest that is not YAML', () => ({ home: makeHome(), ...files('version: [1\n') }), /not valid YAML/],
  ['a policy that does not parse', () => ({ home: makeHome(), ...files(GOOD, 'permit (principal, action, resource) when { ;') }), /p.cedar:1:45: failed to parse polic/],
  ['a missing policy', () => ({ home: makeHome(), manifest: files(GOOD).manifest, policy: '/nonexistent/p.cedar' }), /policy/i],
  ['a task context that is not strict JSON', () => ({ home: makeHome(), ...files(GOOD), context: writeFiles({ c: '{"task":{"id":"T"},"task":{}}' }).c }), /task context/],
  ['a home that was never initialized', () => ({ home: join(tempDir(), 'none'), ...files(GOOD) }), /gate key|init/],
  ['a missing operations database', () => { const home = makeHome(); rmSync(join(home, 'operations.db')); return { home, ...files(GOOD) }; }, /operations database/],
  ['a gate key readable by others', () => { const home = makeHome(); chmodSync(join(home, 'gate.key'), 0o644); return { home, ...files(GOOD) }; }, /0600/],
  ['a gate key that is garbage', () => { const home = makeHome(); writeFileSync(join(home, 'gate.key'), 'junk', { mode: 0o600 }); return { home, ...files(GOOD) }; }, /gate key/],
  ['a ledger database that is not SQLite', () => { const home = makeHome(); writeFileSync(join(home, 'ledger.db'), 'not a database at all, just text'.repeat(200)); rmSync(join(home, 'ledger.db-wal'), { force: true }); return { home, ...files(GOOD) }; }, /database|ledger/i],
];

function files(manifest: string, policy = PERMIT_ALL) {
  const f = writeFiles({ 'm.yaml': manifest, 'p.cedar': policy });
  return { manifest: f['m.yaml'], policy: f['p.cedar'] };
}

for (const [name, setup, message] of cases) {
  test(`start-up refuses ${name} before spawning the upstream`, () => {
    const r = start(setup());
    assert.equal(r.status, 2, r.stderr);
    assert.match(r.stderr, message);
    assert.equal(r.spawned, false, 'the upstream must not be spawned');
    assert.equal(r.stdout, '', 'stdout carries only protocol frames');
  });
}

test('the same inputs, all good, do start (the cases above fail for their own reason)', () => {
  const r = start({ home: makeHome(), ...files(GOOD) });
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.spawned, true);
});

test('init never overwrites a key', () => {
  const home = makeHome();
  const again = cloakpipe(['init', '--home', home]);
  assert.equal(again.status, 2);
  assert.match(again.stderr, /refusing to overwrite/);
});
