// Gates in containers that share the host's name (host networking), or a SQLite home, each
// number their own processes: a pid another gate wrote names another process here. A gate
// starting beside a running gate of another pid namespace leaves that gate's in-flight operation
// pending (fleet.md: a pending operation becomes unknown when its own gate restarts; ADR 111),
// rather than judging it by a pid of its own namespace and declaring it unknown under the running
// call. The real binary, the other gate in its own pid namespace (unshare), a real PostgreSQL and
// a SQLite home two gates share.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { call, records, setup, waitFor } from '../helpers/recording-gate.js';
import { cloakpipe, makeHome } from '../helpers/cli.js';
import { recordingUpstream, startGate } from '../helpers/gate.js';
import { pgSkip } from '../store/postgres/pg.js';
import { freshDatabase, initGate, sql } from '../helpers/fleet.js';

const UNSHARE = ['unshare', '--pid', '--fork', '--mount-proc'];

/** Own pid namespaces need root and unshare(1); in CI their absence is a failure, never a skip. */
function namespaces(): { skip?: string } {
  const r = spawnSync(UNSHARE[0], [...UNSHARE.slice(1), 'true']);
  if (r.status === 0) return {};
  if (process.env.CI === 'true') throw new Error('unshare --pid does not work here: in CI this suite must run (as root, with util-linux)');
  return { skip: 'unshare --pid does not work here (needs root and util-linux)' };
}

/** Where the gates keep their state: a fleet's database, or one SQLite home both use. */
interface Shared {
  home: (name: string) => string;
  flags: string[];
  state: (id: string) => Promise<string | undefined>;
}

const postgres = async (): Promise<Shared> => {
  const url = await freshDatabase();
  return {
    home: (name) => initGate(url, name),
    flags: ['--store', url],
    state: async (id) => (await sql(url, 'SELECT state FROM cloakpipe.operations WHERE id = $1', [id]))[0]?.state as string | undefined,
  };
};

const sqliteHome = async (): Promise<Shared> => {
  const home = makeHome();
  return {
    home: () => home,
    flags: [],
    state: async (id) => {
      const r = cloakpipe(['ops', 'show', id, '--json', '--home', home]);
      return r.status === 0 ? (JSON.parse(r.stdout).state as string) : undefined;
    },
  };
};

for (const [name, store, opts] of [
  ['a fleet on PostgreSQL', postgres, pgSkip],
  ['one SQLite home', sqliteHome, {}],
] as const)
  test(`${name}: a gate starting beside a running gate of another pid namespace leaves that gate's in-flight operation pending`, { ...opts, ...namespaces(), timeout: 120_000 }, async () => {
    const st = await store();
    const s = setup();
    const release = join(s.dir, 'release');
    const held = recordingUpstream('approvals', s.record, { RECORDER_MODE: 'held', RECORDER_RELEASE_FILE: release });
    const a = await startGate({ ...s, home: st.home('gate-ns'), flags: st.flags, ...held, under: UNSHARE });
    const args = { text: 'ship order 9', key: 'op-ns' };
    let b: Awaited<ReturnType<typeof startGate>> | undefined;
    try {
      const first = call(a, 'write_note', args, undefined, 60_000);
      await waitFor(() => records(s).length === 1, 30_000, 'the call to reach the tool');
      assert.equal(await st.state('op-ns'), 'pending');
      // Another gate starts on this host name, in the host's pid namespace: its start-up recovery.
      b = await startGate({ ...s, home: st.home('gate-host'), flags: st.flags, ...recordingUpstream('approvals', s.record) });
      assert.equal(await st.state('op-ns'), 'pending', "the running gate's call is still in flight");
      writeFileSync(release, '');
      const answered = await first;
      assert.equal(answered.ok, true, JSON.stringify(answered));
      for (const end = Date.now() + 30_000; (await st.state('op-ns')) !== 'succeeded'; await new Promise((r) => setTimeout(r, 50)))
        assert.ok(Date.now() < end, `the operation never settled: ${await st.state('op-ns')}`);
      const again = await call(b, 'write_note', args, undefined, 60_000);
      assert.equal(again.ok && again.text, answered.ok && answered.text, 'the other gate replays the stored result');
    } finally {
      if (!existsSync(release)) writeFileSync(release, '');
      await Promise.all([a.close(), b?.close()]);
    }
    assert.equal(records(s).filter((r) => r.tool === 'write_note').length, 1, 'the tool ran once');
  });

test("one SQLite home: a gate of another pid namespace killed mid-call leaves its operation pending, which ops reconcile settles with --owner-gone", { ...namespaces(), timeout: 120_000 }, async () => {
  const st = await sqliteHome();
  const s = setup();
  const held = recordingUpstream('approvals', s.record, { RECORDER_MODE: 'held', RECORDER_RELEASE_FILE: join(s.dir, 'never') });
  // --kill-child: the namespace (gate and server) ends with unshare, as a container's does.
  const a = await startGate({ ...s, home: st.home('gate-ns'), flags: st.flags, ...held, under: [...UNSHARE, '--kill-child'] });
  const first = call(a, 'write_note', { text: 'ship order 10', key: 'op-gone' }, undefined, 60_000);
  await waitFor(() => records(s).length === 1, 30_000, 'the call to reach the tool');
  process.kill(a.pid, 'SIGKILL');
  await Promise.all([a.exited, first.catch(() => undefined)]);
  const b = await startGate({ ...s, home: st.home('gate-host'), flags: st.flags, ...recordingUpstream('approvals', s.record) });
  try {
    assert.equal(await st.state('op-gone'), 'pending', 'this gate cannot tell that gate is gone (ADR 111)');
    const home = st.home('');
    const refused = cloakpipe(['ops', 'reconcile', 'op-gone', '--outcome', 'not-executed', '--home', home]);
    assert.notEqual(refused.status, 0, refused.stdout);
    assert.match(refused.stderr, /repeat with --owner-gone/);
    const settled = cloakpipe(['ops', 'reconcile', 'op-gone', '--outcome', 'not-executed', '--owner-gone', '--home', home]);
    assert.equal(settled.status, 0, settled.stderr);
    assert.equal(await st.state('op-gone'), 'failed');
  } finally {
    await b.close();
  }
});
