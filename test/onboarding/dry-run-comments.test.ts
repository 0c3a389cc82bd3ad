// VS Code's and Cursor's mcp.json are JSONC: a comment beside an entry may hold what the entry's
// redacted values hold (`// token: sk-…`, a key kept for later). wrap and unwrap --dry-run printed
// comments as they are, on the changed lines and as context. Now each comment is shown as
// <redacted>, its line breaks kept. Through the real binary and server-everything.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CLI, EVERYTHING } from '../helpers/cli.js';
import { put, trusted, type World, world } from './host-world.js';

const CANARIES = ['sk-COMMENTCANARY-1', 'COMMENTCANARY-2', 'COMMENTCANARY-3', 'COMMENTCANARY-4'];
const J = JSON.stringify;

function run(w: World, args: string[]) {
  const r = spawnSync(process.execPath, [CLI, ...trusted(args)], { cwd: w.project, env: w.env, encoding: 'utf8', timeout: 120_000 });
  for (const c of CANARIES) assert.ok(!r.stdout.includes(c) && !r.stderr.includes(c), `${args.join(' ')} printed a comment: ${r.stdout}${r.stderr}`);
  return r;
}

test('wrap and unwrap --dry-run of a JSONC config show no comment, in the entry or around it; the config keeps them all', () => {
  const w = world();
  const text = [
    '{',
    '  "servers": {',
    `    // the old key: ${CANARIES[0]}`,
    '    "ev": {',
    `      "command": ${J(process.execPath)}, // ${CANARIES[1]}`,
    `      "args": [${J(EVERYTHING)}, "stdio"] /* ${CANARIES[2]} */`,
    '    },',
    `    /* kept for later:`,
    `       ${CANARIES[3]} */`,
    '    "other": { "command": "some-server" }',
    '  },',
    '  "inputs": []',
    '}',
    '',
  ].join('\n');
  const config = put(join(w.project, '.vscode', 'mcp.json'), text);
  const dry = run(w, ['wrap', '--host', 'vscode', '--server', 'ev', '--dry-run']);
  assert.equal(dry.status, 0, dry.stderr);
  assert.match(dry.stdout, /^\+\s+"mcp-proxy",$/m);
  assert.match(dry.stdout, /^ {5}\/\/ <redacted>$/m);
  assert.match(dry.stdout, /\/\* <redacted> \*\//);
  // A comment over two lines keeps its two lines: the hunks' line numbers are the file's.
  assert.match(dry.stdout, /^ {5}\/\* <redacted>\n \s*\*\/$/m);

  const wrapped = run(w, ['wrap', '--host', 'vscode', '--server', 'ev', '--timeout', '60s']);
  assert.equal(wrapped.status, 0, wrapped.stderr);
  for (const c of CANARIES) assert.ok(readFileSync(config, 'utf8').includes(c), 'the config keeps its comments');
  const back = run(w, ['unwrap', '--host', 'vscode', '--dry-run']);
  assert.equal(back.status, 0, back.stderr);
  assert.match(back.stdout, /^-\s+"mcp-proxy",$/m);
  const u = run(w, ['unwrap', '--host', 'vscode']);
  assert.equal(u.status, 0, u.stderr);
  assert.equal(readFileSync(config, 'utf8'), text);
});
