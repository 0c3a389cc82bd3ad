// A gate entry this home has no record of (wrapped by hand, or a project's config from elsewhere)
// is "already wrapped" only when its gate would decide with this home's servers/NAME as wrap sets
// it up: the flags wrap writes, this home, no CLOAKPIPE_* of the entry's env choosing another
// home, store or key, and this home holds the manifest and policy its --server names (else its
// gate does not start: it used to be "already wrapped" all the same). Anything else is named and
// left, exit 1: wrap never claims a gate it did not set up. Through the real binary; unwrap has no record of such an entry and leaves it too.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CLI } from '../helpers/cli.js';
import { put, run, serverHeld, world } from './host-world.js';

test('a hand-wrapped entry whose gate would take another home, manifest, policy or store, or would not start (no such server in the home), is named and left, exit 1; one with the flags wrap writes is already wrapped', () => {
  const w = world();
  const elsewhere = join(w.project, '.gate');
  const gate = (server: string, ...flags: string[]) => [CLI, 'mcp-proxy', '--server', server, ...flags, '--', 'node', 'server.js'];
  const home = ['--home', w.gate];
  const entries: Record<string, { command: string; args: string[]; env?: Record<string, string> }> = {
    envhome: { command: process.execPath, args: gate('envhome', '--mode', 'enforce', ...home), env: { CLOAKPIPE_HOME: elsewhere } },
    envstore: { command: 'cloakpipe', args: gate('envstore', ...home).slice(1), env: { CLOAKPIPE_STORE: 'postgres://elsewhere/db' } },
    otherhome: { command: 'cloakpipe', args: gate('otherhome', '--home', elsewhere).slice(1) },
    nohome: { command: process.execPath, args: gate('nohome', '--mode', 'enforce') },
    manifest: { command: 'cloakpipe', args: gate('manifest', ...home, '--manifest', join(elsewhere, 'm.yaml'), '--policy', join(elsewhere, 'p.cedar')).slice(1) },
    undeclared: { command: process.execPath, args: gate('undeclared', ...home, '--list-undeclared') },
    config: { command: process.execPath, args: gate('config', ...home, `--config=${join(elsewhere, 'c.json')}`) },
    handmade: { command: process.execPath, args: gate('handmade', '--mode', 'shadow', ...home), env: { CLOAKPIPE_UPSTREAM_ENV_NODE_OPTIONS: '--max-old-space-size=64', TOKEN: 'x' } },
    // As wrap writes them, but their gate finds no manifest and policy, so it does not start.
    nofolder: { command: process.execPath, args: gate('nofolder', '--mode', 'shadow', ...home) },
    nopolicy: { command: process.execPath, args: gate('nopolicy', '--mode', 'shadow', ...home) },
    badname: { command: process.execPath, args: [...gate('../../x', '--mode', 'shadow', ...home)] },
    // Flag forms read as the gate reads them: --home=DIR is this home; a value that is a flag
    // (--upstream-header taking --manifest=…) makes the gate refuse its command line.
    equalshome: { command: process.execPath, args: gate('equalshome', '--mode', 'shadow', `--home=${w.gate}`) },
    flagvalue: { command: process.execPath, args: gate('flagvalue', '--mode', 'shadow', ...home, '--upstream-header', `--manifest=${join(elsewhere, 'm.yaml')}`) },
  };
  for (const held of ['handmade', 'equalshome', 'flagvalue']) serverHeld(w, held);
  put(join(w.gate, 'servers', 'nopolicy', 'manifest.yaml'), 'version: 1\nrelease: nopolicy@1\ntools: {}\n');
  const config = put(join(w.project, '.mcp.json'), JSON.stringify({ mcpServers: entries }, null, 2) + '\n');
  const before = readFileSync(config);
  const r = run(w, 'wrap', ['--host', config]);
  assert.equal(r.status, 1, r.stderr);
  const said = (name: string, what: string) => assert.ok(r.stderr.includes(`"${name}": left as is: its gate would start with ${what}, which wrap does not set up`), `${name}: ${r.stderr}`);
  said('envhome', 'CLOAKPIPE_HOME in its env');
  said('envstore', 'CLOAKPIPE_STORE in its env');
  said('otherhome', 'another --home');
  said('nohome', 'no --home');
  said('manifest', '--manifest, --policy');
  said('undeclared', '--list-undeclared');
  said('config', '--config');
  assert.ok(r.stderr.includes('"handmade": already wrapped (servers/handmade, shadow mode)'), r.stderr);
  const notStarted = (name: string, why: string) => assert.ok(r.stderr.includes(`"${name}": left as is, not protected: its gate would not start: ${why}; unwrap it and wrap it again to draft it`), `${name}: ${r.stderr}`);
  notStarted('nofolder', 'this home holds no manifest.yaml or policy.cedar in servers/nofolder');
  notStarted('nopolicy', 'this home holds no policy.cedar in servers/nopolicy');
  notStarted('badname', '--server "../../x" is not a server name (letters, digits, _ . -; not a path)');
  assert.ok(r.stderr.includes('"equalshome": already wrapped (servers/equalshome, shadow mode)'), r.stderr);
  said('flagvalue', "a command line it refuses (Option '--upstream-header' argument is ambiguous.)");
  assert.equal((r.stderr.match(/already wrapped/g) ?? []).length, 2, r.stderr);
  assert.ok(!r.stderr.includes(elsewhere), 'no value of the entry is echoed');
  assert.deepEqual(readFileSync(config), before);

  const u = run(w, 'unwrap', ['--host', config]);
  assert.equal(u.status, 1, u.stderr);
  assert.deepEqual(readFileSync(config), before, 'unwrap has no record of them either');
});
