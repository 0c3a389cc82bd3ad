// An entry's env is what the host sets on the process it starts: once wrapped, the gate's node.
// NODE_OPTIONS=--require FILE (or LD_PRELOAD, NODE_PATH, …) in it ran FILE inside the gate,
// before cloakpipe's first line. Through the real binary and the SDK's client, started as the
// host starts the entry: the server still gets the variable, the gate never does.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { CLI, MEMORY } from '../helpers/cli.js';
import { put, world } from './host-world.js';

type Entry = { command: string; args: string[]; env?: Record<string, string>; cwd?: string };

test('NODE_OPTIONS and LD_PRELOAD in a wrapped entry reach the server only: the gate\'s own node never loads them; unwrap restores every byte', async () => {
  const w = world();
  const marks = join(w.project, 'loaded.jsonl');
  // Each process that loads it says who it is (its argv).
  const evil = put(join(w.project, 'evil.js'), `require('fs').appendFileSync(${JSON.stringify(marks)}, JSON.stringify(process.argv) + '\\n');\n`);
  const entry = { command: process.execPath, args: [MEMORY], env: { NODE_OPTIONS: `--require ${evil}`, LD_PRELOAD: '', MEMORY_FILE_PATH: join(w.project, 'memory.jsonl'), NODE_ENV: 'production' } };
  const config = put(join(w.project, '.mcp.json'), JSON.stringify({ mcpServers: { mem: entry } }, null, 2) + '\n');
  const before = readFileSync(config);
  const r = spawnSync(process.execPath, [CLI, 'wrap', '--trust-project', '--host', 'claude-code', '--mode', 'enforce', '--timeout', '30s'], { cwd: w.project, env: w.env, encoding: 'utf8', timeout: 120_000 });
  assert.equal(r.status, 0, r.stderr);
  const wrapped = (JSON.parse(readFileSync(config, 'utf8')) as { mcpServers: Record<string, Entry> }).mcpServers.mem;
  assert.ok(wrapped.args.includes('mcp-proxy'));

  const drafted = existsSync(marks) ? readFileSync(marks, 'utf8').split('\n').filter(Boolean).length : 0;
  const client = new Client({ name: 'host', version: '1' });
  await client.connect(new StdioClientTransport({ command: wrapped.command, args: wrapped.args, env: wrapped.env, cwd: wrapped.cwd, stderr: 'ignore' }), { timeout: 60_000 });
  const graph = await client.callTool({ name: 'read_graph', arguments: {} }, undefined, { timeout: 60_000 });
  assert.notEqual(graph.isError, true);
  await client.close();

  const loaded = readFileSync(marks, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as string[]).slice(drafted);
  assert.ok(loaded.length > 0 && loaded.every((argv) => argv.includes(MEMORY)), `the server loaded it, the gate did not: ${JSON.stringify(loaded)}`);
  assert.ok(!loaded.some((argv) => argv.includes('mcp-proxy')));
  // Under a name no loader reads; NODE_ENV, read by programs only, stays as it is.
  assert.deepEqual(Object.keys(wrapped.env!).sort(), ['CLOAKPIPE_UPSTREAM_ENV_LD_PRELOAD', 'CLOAKPIPE_UPSTREAM_ENV_NODE_OPTIONS', 'MEMORY_FILE_PATH', 'NODE_ENV']);

  const u = spawnSync(process.execPath, [CLI, 'unwrap', '--host', 'claude-code'], { cwd: w.project, env: w.env, encoding: 'utf8', timeout: 60_000 });
  assert.equal(u.status, 0, u.stderr);
  assert.deepEqual(readFileSync(config), before);
});

test('an entry whose env sets CLOAKPIPE_HOME (a project choosing the home the gate would read its policy and key from) is named and left as is, exit 1', () => {
  const w = world();
  // The default home (no --home on the gate's command line): only the entry's env would name one.
  const env: NodeJS.ProcessEnv = { ...w.env };
  delete env.CLOAKPIPE_HOME;
  assert.equal(spawnSync(process.execPath, [CLI, 'init'], { env, encoding: 'utf8' }).status, 0);
  const elsewhere = join(w.project, '.gate');
  const entry = { command: process.execPath, args: [MEMORY], env: { CLOAKPIPE_HOME: elsewhere } };
  const config = put(join(w.project, '.mcp.json'), JSON.stringify({ mcpServers: { mem: entry } }, null, 2) + '\n');
  const before = readFileSync(config);
  const r = spawnSync(process.execPath, [CLI, 'wrap', '--trust-project', '--host', 'claude-code', '--timeout', '30s'], { cwd: w.project, env, encoding: 'utf8', timeout: 120_000 });
  assert.equal(r.status, 1, r.stderr);
  assert.ok(r.stderr.includes('"mem": left as is: its env sets CLOAKPIPE_HOME, which the gate started in its place would take as its own'), r.stderr);
  assert.deepEqual(readFileSync(config), before);
  assert.ok(!r.stderr.includes(elsewhere), 'its value is not echoed');
});
