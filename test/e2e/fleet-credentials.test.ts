// A fleet gate's database password (PGPASSWORD, fleet.md) is the gate's own: the upstream it
// starts never gets it, or the server it guards could rewrite the fleet's operations, receipts
// and chains. The real binary, a real PostgreSQL, server-everything's get-env as the witness.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { EVERYTHING, PERMIT_ALL, makeHome, writeFiles } from '../helpers/cli.js';
import { startGate } from '../helpers/gate.js';
import { pgSkip } from '../store/postgres/pg.js';
import { freshDatabase, initGate } from '../helpers/fleet.js';

const MANIFEST = 'version: 1\nrelease: env-test@1\ntools:\n  get-env:\n    effect: read\n    arguments: {}\n';

/** What the upstream of a gate started with `flags` and PGPASSWORD = `password` sees, and the gate's stderr. */
async function upstreamEnvOf(home: string, flags: string[], password: string): Promise<{ env: Record<string, string>; stderr: string }> {
  const f = writeFiles({ 'm.yaml': MANIFEST, 'p.cedar': PERMIT_ALL });
  const gated = await startGate({ home, manifest: f['m.yaml'], policy: f['p.cedar'], flags, upstream: [process.execPath, EVERYTHING, 'stdio'], env: { PGPASSWORD: password } });
  try {
    const res = (await gated.client.callTool({ name: 'get-env', arguments: {} })) as { content: { type: string; text: string }[] };
    return { env: JSON.parse(res.content[0].text) as Record<string, string>, stderr: gated.stderr() };
  } finally {
    await gated.close();
  }
}

test("a gate on a fleet's PostgreSQL does not hand the store's password to its upstream", pgSkip, async () => {
  const url = await freshDatabase();
  const home = initGate(url, 'gate-env');
  const canary = `pg-secret-${randomBytes(8).toString('hex')}`;
  const { env, stderr } = await upstreamEnvOf(home, ['--store', url], canary);
  assert.equal(env.PATH, process.env.PATH, 'the rest of the environment is the host-given one');
  assert.ok(!('PGPASSWORD' in env), 'PGPASSWORD reached the upstream');
  assert.ok(!JSON.stringify(env).includes(canary));
  assert.ok(!stderr.includes(canary));
});

test('a gate on its own SQLite store leaves PGPASSWORD to the upstream (it is not the gate\'s)', async () => {
  const { env } = await upstreamEnvOf(makeHome(), [], 'the-servers-own');
  assert.equal(env.PGPASSWORD, 'the-servers-own');
});
