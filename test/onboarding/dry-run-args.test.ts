// wrap and unwrap --dry-run print a diff to a terminal or a CI log. A server's args may hold a
// key (`--api-key sk-…`, `--token=…`): they were printed as they are, on the lines wrap changes
// and as context around them. Now shown as "<redacted>", as env values and URLs are; the gate's
// own words and flag names stay readable. Through the real binary and server-everything.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { CLI, EVERYTHING } from '../helpers/cli.js';
import { put, trusted, type World, world } from './host-world.js';

const CANARIES = ['sk-ARGCANARY-1', 'tok-ARGCANARY-2', 'ARGCANARY-3'];

function run(w: World, args: string[]) {
  const r = spawnSync(process.execPath, [CLI, ...trusted(args)], { cwd: w.project, env: w.env, encoding: 'utf8', timeout: 120_000 });
  for (const c of CANARIES) assert.ok(!r.stdout.includes(c) && !r.stderr.includes(c), `${args.join(' ')} printed an arg: ${r.stdout}${r.stderr}`);
  return r;
}

test("wrap and unwrap --dry-run show no server's args but flag names, on changed lines and as context", () => {
  const w = world();
  const ev = { command: process.execPath, args: [EVERYTHING, 'stdio', '--api-key', CANARIES[0], `--token=${CANARIES[1]}`] };
  // Another entry left as is (--server ev): its args are context around the wrapped one.
  const other = { command: 'some-server', args: ['--secret', CANARIES[2]] };
  const config = put(join(w.project, '.mcp.json'), `{\n  "mcpServers": {\n    "other": ${JSON.stringify(other)},\n    "ev": ${JSON.stringify(ev)}\n  }\n}\n`);
  const dry = run(w, ['wrap', '--host', config, '--server', 'ev', '--dry-run']);
  assert.equal(dry.status, 0, dry.stderr);
  assert.match(dry.stdout, /^\+\s+"mcp-proxy",$/m);
  assert.match(dry.stdout, /^ {5}"other": \{"command":"some-server","args":\["--secret","<redacted>"\]\},$/m);
  assert.match(dry.stdout, /^-.*"--api-key","<redacted>","<redacted>"\]\}$/m);

  const wrapped = run(w, ['wrap', '--host', config, '--server', 'ev', '--timeout', '60s']);
  assert.equal(wrapped.status, 0, wrapped.stderr);
  const back = run(w, ['unwrap', '--host', config, '--dry-run']);
  assert.equal(back.status, 0, back.stderr);
  assert.match(back.stdout, /^-\s+"mcp-proxy",$/m);
  assert.match(back.stdout, /^\+.*"--api-key","<redacted>","<redacted>"\]\}$/m);
});
