// What `cloakpipe manifest draft` and `wrap` write for a person to review (the manifest, the
// policy) and what they print hold none of the server's arguments or env values: a command line
// carries keys (`--api-key=…`, connection strings) and a manifest is reviewed, committed and
// shared. Only wrap's own records of the entry (wrapped.json, the config's backup: 0600 in the
// 0700 home, what unwrap restores from) keep them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { CLI, cloakpipe, helperScript, tempDir } from '../helpers/cli.js';
import { put, world } from './host-world.js';

const ARG = 'CANARY-arg-secret-7d31';
const ENV = 'CANARY-env-secret-0b9e';

/** Every file under `dir`, by its path relative to `dir`. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((f) => statSync(join(dir, f)).isFile());
}

test('manifest draft: no argument of the server command in the manifest, the policy or what it prints; the header names the program', () => {
  const dir = tempDir('cloakpipe-draft-');
  const out = join(dir, 'm.yaml');
  const r = cloakpipe(['manifest', 'draft', '--out', out, '--', process.execPath, helperScript('upstream.js'), 'paged', `--api-key=${ARG}`], { timeout: 60_000 });
  assert.equal(r.status, 0, r.stderr);
  for (const f of filesUnder(dir)) assert.ok(!readFileSync(join(dir, f), 'utf8').includes(ARG), `${f} holds an argument of the server`);
  assert.ok(!r.stdout.includes(ARG) && !r.stderr.includes(ARG), 'printed');
  assert.match(readFileSync(out, 'utf8'), new RegExp(`^# Drafted by \`cloakpipe manifest draft\` from the tools/list of: ${process.execPath.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')} with 3 arguments \\(not copied here`));
  // Without --out, the manifest and the policy go to stdout.
  const s = cloakpipe(['manifest', 'draft', '--', process.execPath, helperScript('upstream.js'), 'paged', ARG], { timeout: 60_000 });
  assert.equal(s.status, 0, s.stderr);
  assert.ok(!s.stdout.includes(ARG) && !s.stderr.includes(ARG), 'printed');
});

test('wrap: the drafted manifest and policy and what wrap prints hold no argument or env value of the entry; only its records for unwrap do', () => {
  const w = world();
  const J = JSON.stringify;
  put(join(w.project, '.mcp.json'), `{\n  "mcpServers": {\n    "crm": { "command": ${J(process.execPath)}, "args": [${J(helperScript('upstream.js'))}, "paged", "--token", ${J(ARG)}], "env": { "CRM_TOKEN": ${J(ENV)} } }\n  }\n}\n`);
  const r = spawnSync(process.execPath, [CLI, 'wrap', '--trust-project', '--host', 'claude-code'], { cwd: w.project, env: w.env, encoding: 'utf8', timeout: 120_000 });
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stderr, /"crm": drafted 3 tools/);
  for (const s of [ARG, ENV]) assert.ok(!r.stdout.includes(s) && !r.stderr.includes(s), `printed ${s}`);
  const kept = ['servers/crm/wrapped.json', ...readdirSync(join(w.gate, 'backups')).map((f) => join('backups', f))];
  for (const f of filesUnder(w.gate)) {
    const text = readFileSync(join(w.gate, f), 'latin1');
    if (kept.includes(f)) assert.ok(text.includes(ARG) && text.includes(ENV), `${f}: what unwrap restores`);
    else for (const s of [ARG, ENV]) assert.ok(!text.includes(s), `${relative(w.gate, join(w.gate, f))} holds ${s}`);
  }
});
