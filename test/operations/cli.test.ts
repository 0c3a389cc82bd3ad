// cloakpipe ops through the real binary: usage errors, listing, and a reconcile that is a
// signed ledger entry committed with the state change.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { hostname } from 'node:os';
import { spawn } from 'node:child_process';
import { cloakpipe, makeHome, tempDir } from '../helpers/cli.js';
import { Operations } from '../../src/operations/operations.js';
import { openHome } from '../../src/home/open.js';
import { readEntries } from '../../src/ledger/ledger.js';
import { verifyEntrySignature } from '../../src/ledger/entry.js';
import { loadPublicKey } from '../../src/ledger/keys.js';
import { operationDigest } from '../../src/operations/operation-id.js';
import { processStart } from '../../src/operations/owner.js';

const FP = 'sha256:' + 'd'.repeat(64);

function seeded() {
  const home = makeHome();
  const h = openHome({ home });
  const s = new Operations(h.store.operations, 'some-host/1/dead');
  s.begin('op-unknown', FP, 'write_note', Date.now());
  s.fail('op-unknown', 1, 'timeout', Date.now());
  s.begin('op-done', FP, 'write_note', Date.now());
  s.settle('op-done', 1, { result: { content: [] } }, Date.now());
  s.begin('op-orphan', FP, 'write_note', Date.now()); // pending, its gate gone
  h.close();
  return home;
}

test('ops list / show', () => {
  const home = seeded();
  const all = cloakpipe(['ops', 'list', '--json', '--home', home]);
  assert.equal(all.status, 0, all.stderr);
  assert.equal(all.stdout.trim().split('\n').length, 3);
  const unknown = cloakpipe(['ops', 'list', '--state', 'unknown', '--json', '--home', home]);
  assert.deepEqual(unknown.stdout.trim().split('\n').map((l) => JSON.parse(l).id), ['op-unknown']);
  const table = cloakpipe(['ops', 'list', '--home', home]);
  assert.match(table.stdout, /unknown\s+write_note/);
  const show = cloakpipe(['ops', 'show', 'op-done', '--json', '--home', home]);
  assert.deepEqual(JSON.parse(show.stdout).result, { content: [] });
  assert.equal(JSON.parse(show.stdout).operation, operationDigest('op-done'));
  assert.equal(cloakpipe(['ops', 'show', 'missing', '--home', home]).status, 1);
});

test('ops usage errors exit 2', () => {
  const home = seeded();
  const cases = [
    ['ops'],
    ['ops', 'frobnicate'],
    ['ops', 'list', '--state', 'weird', '--home', home],
    ['ops', 'show', '--home', home],
    ['ops', 'show', 'a', 'b', '--home', home],
    ['ops', 'reconcile', 'op-unknown', '--home', home],
    ['ops', 'reconcile', 'op-unknown', '--outcome', 'maybe', '--home', home],
    ['ops', 'reconcile', 'op-unknown', '--outcome', 'not-executed', '--result', 'x.json', '--home', home],
    ['ops', 'list', '--home', join(tempDir(), 'nohome')],
  ];
  for (const c of cases) assert.equal(cloakpipe(c).status, 2, c.join(' '));
});

test('ops reconcile: state and a signed operator entry together; only unknown or orphaned pending', () => {
  const home = seeded();
  const bad = join(tempDir(), 'r.json');
  writeFileSync(bad, '[1,2]');
  assert.equal(cloakpipe(['ops', 'reconcile', 'op-unknown', '--outcome', 'succeeded', '--result', bad, '--home', home]).status, 2);

  const r = cloakpipe(['ops', 'reconcile', 'op-unknown', '--outcome', 'failed', '--json', '--home', home]);
  assert.equal(r.status, 0, r.stderr);
  assert.deepEqual({ ...JSON.parse(r.stdout), entry: 0 }, { id: 'op-unknown', from: 'unknown', state: 'failed', outcome: 'failed', entry: 0 });
  // Its owner is a gate on another host, which this one cannot see: settled only once the
  // operator says that gate is stopped.
  const far = cloakpipe(['ops', 'reconcile', 'op-orphan', '--outcome', 'not-executed', '--home', home]);
  assert.equal(far.status, 1);
  assert.match(far.stderr, /another host .*--owner-gone/);
  const o = cloakpipe(['ops', 'reconcile', 'op-orphan', '--outcome', 'not-executed', '--owner-gone', '--home', home]);
  assert.equal(o.status, 0, o.stderr);
  const done = cloakpipe(['ops', 'reconcile', 'op-done', '--outcome', 'failed', '--home', home]);
  assert.equal(done.status, 1);
  assert.match(done.stderr, /succeeded/);
  assert.equal(cloakpipe(['ops', 'reconcile', 'missing', '--outcome', 'failed', '--home', home]).status, 1);

  const h = openHome({ home });
  const entries = [...readEntries(h.store.ledger)];
  h.close();
  const pub = loadPublicKey(join(home, 'gate.pub'));
  const ops = entries.filter((e) => e.kind === 'operator');
  assert.equal(ops.length, 2);
  for (const e of ops) assert.ok(verifyEntrySignature(e, pub));
  assert.equal(ops[0].operation, operationDigest('op-unknown'));
  assert.equal(ops[0].state_before, 'unknown');
  assert.equal(ops[1].outcome, 'not-executed');
  assert.ok(!JSON.stringify(entries).includes('op-unknown'), 'ids appear as digests only');
});

test('ops reconcile: a pending whose pid now belongs to another process is orphaned; its live owner is not', async () => {
  // A live process (a stand-in for a pid reused after the owning gate died or the host rebooted).
  const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
  try {
    await new Promise((r) => child.once('spawn', r));
    const pid = child.pid!;
    const start = processStart(pid);
    assert.ok(start, 'this host has /proc');
    const home = makeHome();
    const h = openHome({ home });
    const [boot, ticks] = start.split('.');
    const owners = {
      'op-reused': `${hostname()}/${pid}/${boot}.${Number(ticks) + 1}/ab`,
      'op-other-boot': `${hostname()}/${pid}/${'0'.repeat(8)}-0000-0000-0000-${'0'.repeat(12)}.${ticks}/ab`,
      'op-live': `${hostname()}/${pid}/${start}/ab`,
    };
    for (const [id, owner] of Object.entries(owners)) new Operations(h.store.operations, owner).begin(id, FP, 'write_note', Date.now());
    h.close();
    for (const id of ['op-reused', 'op-other-boot']) {
      const r = cloakpipe(['ops', 'reconcile', id, '--outcome', 'not-executed', '--home', home]);
      assert.equal(r.status, 0, `${id}: ${r.stderr}`);
    }
    const live = cloakpipe(['ops', 'reconcile', 'op-live', '--outcome', 'not-executed', '--home', home]);
    assert.equal(live.status, 1);
    assert.match(live.stderr, /in flight on a running gate/);
  } finally {
    child.kill('SIGKILL');
  }
});
