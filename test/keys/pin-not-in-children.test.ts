// The token's PIN unlocks the gate key: no process the gate starts may hold it. A gate given the
// PIN in CLOAKPIPE_PKCS11_PIN (the canary: a real SoftHSM token's PIN) in front of
// server-memory; every process under it (the upstream, the orphan watch beside it) is read from
// /proc/<pid>/environ, and neither the PIN nor the store's password (PGPASSWORD) is there.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { MEMORY, PERMIT_ALL, cloakpipe, tempDir, writeFiles } from '../helpers/cli.js';
import { startGate } from '../helpers/gate.js';
import { freshToken, hsmSkip } from '../helpers/softhsm.js';

/** Every process below `root` (by parent pid), with its command line. */
function descendants(root: number): { pid: number; cmd: string }[] {
  const parent = new Map<number, number>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      parent.set(Number(name), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      /* gone */
    }
  }
  const out: { pid: number; cmd: string }[] = [];
  const walk = (p: number) => {
    for (const [pid, ppid] of parent) {
      if (ppid !== p) continue;
      let cmd = '';
      try {
        cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
      } catch {
        continue;
      }
      out.push({ pid, cmd });
      walk(pid);
    }
  };
  walk(root);
  return out;
}

test('no process the gate starts inherits the token PIN or the store password from its environment', hsmSkip, async () => {
  const t = freshToken();
  const home = join(tempDir(), 'home');
  const init = cloakpipe(['init', '--home', home, '--key', t.uri()], { env: { ...process.env, ...t.env, CLOAKPIPE_PKCS11_PIN: t.pin } });
  assert.equal(init.status, 0, init.stderr);
  const password = 'pgpw-canary-' + Math.random().toString(36).slice(2);
  const f = writeFiles({ 'm.yaml': 'version: 1\nrelease: env@1\ntools:\n  read_graph:\n    effect: read\n    arguments: {}\n', 'p.cedar': PERMIT_ALL });
  const g = await startGate({
    home,
    manifest: f['m.yaml'],
    policy: f['p.cedar'],
    upstream: [process.execPath, MEMORY],
    env: { ...t.env, CLOAKPIPE_PKCS11_PIN: t.pin, PGPASSWORD: password, MEMORY_FILE_PATH: join(tempDir(), 'memory.jsonl') },
  });
  try {
    const r = await g.client.callTool({ name: 'read_graph', arguments: {} });
    assert.ok(!r.isError, JSON.stringify(r));
    const kids = descendants(g.pid);
    assert.ok(kids.some((k) => k.cmd.includes(MEMORY)), `the upstream runs under the gate: ${JSON.stringify(kids)}`);
    assert.ok(kids.some((k) => k.cmd.includes('cloakpipe-orphan-watch')), `the orphan watch runs under the gate: ${JSON.stringify(kids)}`);
    for (const k of kids) {
      let env: string;
      try {
        env = readFileSync(`/proc/${k.pid}/environ`, 'utf8');
      } catch {
        continue; // exited since
      }
      assert.ok(!env.includes(t.pin), `the token PIN is in the environment of ${k.cmd}`);
      // The upstream is the host's (PGPASSWORD is not the gate's own with a home store); the watch is the gate's.
      if (k.cmd.includes('cloakpipe-orphan-watch')) assert.ok(!env.includes(password), `the store password is in the environment of ${k.cmd}`);
    }
  } finally {
    await g.close();
  }
});
