// A project's config is the repository's to choose: a .mcp.json (or .vscode/, .cursor/) that is a
// symbolic link can point wrap at ~/.claude.json, another project's config or another user's
// file, which wrap would then rewrite (and start the servers of) as this project's. Such a config
// is named with where it leads and left; the user names the file itself with --host FILE.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { EVERYTHING } from '../helpers/cli.js';
import { put, run, world } from './host-world.js';

const J = JSON.stringify;

test("a project's config that is a symbolic link, or sits in a linked folder, is named with its target and left; the file it names is untouched; --host FILE on the target wraps it", () => {
  const w = world();
  const entry = (name: string) => `{\n  "${name}": {\n    "ev": { "command": ${J(process.execPath)}, "args": [${J(EVERYTHING)}, "stdio"] }\n  }\n}\n`;
  // Files outside the project that a repository's links point at.
  const victim = put(join(w.home, '..', 'elsewhere', '.claude.json'), entry('mcpServers'));
  const victimVs = put(join(w.home, '..', 'elsewhere', 'vscode', 'mcp.json'), entry('servers'));
  const before = [readFileSync(victim), readFileSync(victimVs)];
  const link = join(w.project, '.mcp.json');
  symlinkSync(victim, link);
  const vsFolder = join(w.project, '.vscode');
  symlinkSync(join(victimVs, '..'), vsFolder);
  // A cursor folder of the project's own whose config links out.
  mkdirSync(join(w.project, '.cursor'));
  const cursorLink = join(w.project, '.cursor', 'mcp.json');
  symlinkSync(victim, cursorLink);

  // What a killed wrap of the file the link names would have left beside it: not the project's to remove.
  const leftover = join(victim, '..', '..claude.json.0123456789ab.tmp');
  mkdirSync(leftover, { mode: 0o700 });
  const r = run(w, 'wrap', ['--host', 'claude-code', '--host', 'vscode', '--host', 'cursor', '--timeout', '30s']);
  assert.equal(r.status, 1, r.stderr);
  for (const [p, to] of [[link, victim], [join(vsFolder, 'mcp.json'), victimVs], [cursorLink, victim]])
    assert.ok(r.stderr.includes(`${p}: a symbolic link in the project, to ${to}: left as is`), r.stderr);
  assert.deepEqual([readFileSync(victim), readFileSync(victimVs)], before, 'the files the links name are untouched');
  assert.ok(!existsSync(join(w.gate, 'servers')), 'no server of theirs was started or drafted');
  assert.ok(existsSync(leftover) && !r.stderr.includes(leftover), 'nothing beside the file the link names is removed');

  const u = run(w, 'unwrap', ['--host', 'claude-code']);
  assert.equal(u.status, 1, u.stderr);
  assert.ok(u.stderr.includes(`${link}: a symbolic link in the project, to ${victim}: left as is`), u.stderr);

  // Named by the user, the file is theirs to wrap.
  const own = run(w, 'wrap', ['--host', victim, '--dry-run']);
  assert.equal(own.status, 0, own.stderr);
  assert.ok(own.stdout.includes('mcp-proxy'), own.stdout);
});
