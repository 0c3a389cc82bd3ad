// A project's own config came with the repository: whoever wrote it chose its commands, and
// drafting a server starts it. wrap starts such a server only with --trust-project (ADR 118);
// without it the server is named and left, exit 1, and the user's own configs are wrapped as
// before. A server whose manifest the home already holds is wrapped without starting anything,
// while its command is the one drafted then: one a pull changed is asked for again.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { CLI, EVERYTHING } from '../helpers/cli.js';
import { put, type World, world } from './host-world.js';

const J = JSON.stringify;

const run = (w: World, args: string[]) => spawnSync(process.execPath, [CLI, ...args], { cwd: w.project, env: w.env, encoding: 'utf8', timeout: 120_000 });

test("wrap starts a project's own servers only with --trust-project; the user's configs are wrapped either way", { timeout: 300_000 }, () => {
  const w = world();
  const mark = join(w.project, 'started');
  // The repository's server: it leaves a file when started, then serves as server-everything does.
  const script = put(
    join(w.project, 'server.mjs'),
    `import { writeFileSync } from 'node:fs';\nwriteFileSync(process.env.MARK, 'started');\nprocess.argv = [process.argv[0], ${J(EVERYTHING)}, 'stdio'];\nawait import(${J(pathToFileURL(EVERYTHING).href)});\n`,
  );
  const project = put(join(w.project, '.mcp.json'), `{\n  "mcpServers": {\n    "planted": { "command": ${J(process.execPath)}, "args": [${J(script)}], "env": { "MARK": ${J(mark)} } }\n  }\n}\n`);
  const user = put(join(w.home, '.claude.json'), `{\n  "mcpServers": {\n    "mine": { "command": ${J(process.execPath)}, "args": [${J(EVERYTHING)}, "stdio"] }\n  }\n}\n`);
  const projectBytes = readFileSync(project);

  for (const dry of [['--dry-run'], []]) {
    const r = run(w, ['wrap', '--host', 'claude-code', '--timeout', '60s', ...dry]);
    assert.equal(r.status, 1, r.stderr);
    assert.ok(r.stderr.includes(`"planted": left as is: a server of this project's own config, which wrap would start`), r.stderr);
    assert.ok(!r.stderr.includes(script) && !r.stdout.includes(script), 'its command is not printed');
    assert.ok(!existsSync(mark), 'the project server was not started');
    assert.deepEqual(readFileSync(project), projectBytes, "the project's config is untouched");
    assert.ok(!existsSync(join(w.gate, 'servers', 'planted')), 'nothing drafted for it');
    if (dry.length) assert.ok(r.stdout.includes('mcp-proxy'), "the dry run shows the user's server wrapped");
  }
  assert.ok(readFileSync(user, 'utf8').includes('mcp-proxy'), "the user's own server is wrapped");

  const trusted = run(w, ['wrap', '--host', 'claude-code', '--trust-project', '--timeout', '60s']);
  assert.equal(trusted.status, 0, trusted.stderr);
  assert.ok(existsSync(mark), 'started to draft it, as the user allowed');
  assert.ok(readFileSync(project, 'utf8').includes('mcp-proxy'), 'and wrapped');

  // Drafted once, it is wrapped again without the flag: its manifest is kept, nothing started.
  assert.equal(run(w, ['unwrap', '--host', 'claude-code']).status, 0);
  assert.deepEqual(readFileSync(project), projectBytes);
  rmSync(mark);
  const again = run(w, ['wrap', '--host', 'claude-code', '--timeout', '60s']);
  assert.equal(again.status, 0, again.stderr);
  assert.ok(!existsSync(mark), 'not started: the home holds its manifest');
  assert.ok(readFileSync(project, 'utf8').includes('mcp-proxy'));

  // A pull changes its command: what the user read is not what it runs now, so wrap asks again
  // (the run and the dry run alike) and wraps it once given the flag, still starting nothing.
  assert.equal(run(w, ['unwrap', '--host', 'claude-code']).status, 0);
  const pulled = readFileSync(project, 'utf8').replace(`[${J(script)}]`, `[${J(script)}, "--extra"]`);
  put(project, pulled);
  for (const dry of [['--dry-run'], []]) {
    const r = run(w, ['wrap', '--host', 'claude-code', '--timeout', '60s', ...dry]);
    assert.equal(r.status, 1, r.stderr);
    assert.ok(r.stderr.includes(`"planted": left as is: a server of this project's own config, whose command changed since servers/planted was drafted;`), r.stderr);
    assert.ok(!r.stderr.includes('--extra') && !r.stdout.includes('--extra'), 'its command is not printed');
    assert.equal(readFileSync(project, 'utf8'), pulled, 'left as the pull left it');
  }
  const asked = run(w, ['wrap', '--host', 'claude-code', '--trust-project', '--timeout', '60s']);
  assert.equal(asked.status, 0, asked.stderr);
  assert.ok(asked.stderr.includes('drafted when the server had another command: review it against this one'), asked.stderr);
  assert.ok(readFileSync(project, 'utf8').includes('mcp-proxy'));
  assert.ok(!existsSync(mark), 'not started: its manifest is kept');
});
