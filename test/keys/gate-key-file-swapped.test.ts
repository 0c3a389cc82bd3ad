// The home's gate key file must be the key its gate.pub names, as a token key must: a gate.key
// copied from another home (or a wrong backup restored) used to start the gate on a fresh home,
// which then signed a ledger that verify refused entry by entry. Now the gate, and every other
// command that signs with the home's key, exits 2, named, nothing spawned. The real binary.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { cloakpipe, makeHome, tempDir, writeFiles, PERMIT_ALL } from '../helpers/cli.js';

test("a gate.key that is not gate.pub's key: mcp-proxy and ledger checkpoint exit 2, named; nothing signed", () => {
  const home = makeHome();
  const other = makeHome();
  copyFileSync(join(other, 'gate.key'), join(home, 'gate.key')); // 0600 kept
  const f = writeFiles({ 'm.yaml': 'version: 1\nrelease: swapped@1\ntools: {}\n', 'p.cedar': PERMIT_ALL });
  const marker = join(tempDir(), 'spawned');
  const g = cloakpipe(['mcp-proxy', '--home', home, '--manifest', f['m.yaml'], '--policy', f['p.cedar'], '--', 'sh', '-c', 'touch "$0"; cat >/dev/null', marker], { input: '' });
  assert.equal(g.status, 2, g.stderr);
  assert.match(g.stderr, /gate key .*gate\.key is not the key of this home's .*gate\.pub/);
  assert.equal(existsSync(marker), false, 'nothing spawned');
  const c = cloakpipe(['ledger', 'checkpoint', '--home', home, '--out', join(tempDir(), 'note')]);
  assert.equal(c.status, 2, c.stderr);
  assert.match(c.stderr, /is not the key of this home's/);
  // The other home, whose key it is, starts as before.
  const ok = cloakpipe(['mcp-proxy', '--home', other, '--manifest', f['m.yaml'], '--policy', f['p.cedar'], '--', 'sh', '-c', 'cat >/dev/null'], { input: '' });
  assert.equal(ok.status, 0, ok.stderr);
  const v = cloakpipe(['verify', '--home', other]);
  assert.equal(v.status, 0, v.stdout + v.stderr);
});
