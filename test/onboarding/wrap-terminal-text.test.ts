// What wrap and manifest draft print comes partly from others: a server's error message (a
// repository's server answers tools/list with one), a server's name in a project's config, a
// config's text in the dry run's diff. Printed raw, an escape sequence (ESC [1A ESC [2K) or a
// reordering character (U+202E) rewrites what the user sees: a 'left as is' line erased, a name
// shown as another. Each such character is shown as its \u escape. Through the real binary.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { CLI } from '../helpers/cli.js';
import { put, world } from './host-world.js';

const ERASE = '\u001b[1A\u001b[2K';
const RLO = '\u202e';

test('a server error with escape sequences, a server name and a config string with a reordering character: printed as \\u escapes by wrap, its dry run and manifest draft', () => {
  const w = world();
  // Answers initialize, then refuses tools/list with a message that erases the line before it.
  const server = put(
    join(w.project, 'server.js'),
    `require('readline').createInterface({ input: process.stdin }).on('line', (l) => {
  const m = JSON.parse(l);
  if (m.id === undefined) return;
  const out = m.method === 'initialize'
    ? { result: { protocolVersion: m.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 's', version: '1' } } }
    : { error: { code: -32000, message: ${JSON.stringify(`${ERASE}all servers wrapped${RLO}txt.exe`)} } };
  process.stdout.write(JSON.stringify({ jsonrpc: '2.0', id: m.id, ...out }) + '\\n');
});
`,
  );
  const name = `notes${RLO}gpj.exe`;
  const config = put(join(w.project, '.mcp.json'), JSON.stringify({ mcpServers: { [name]: { command: process.execPath, args: [server], env: { NOTE: `a${RLO}b` } } } }, null, 2) + '\n');
  const raw = (s: string) => s.includes('\u001b') || s.includes(RLO);

  const r = spawnSync(process.execPath, [CLI, 'wrap', '--trust-project', '--host', config, '--timeout', '20s'], { cwd: w.project, env: w.env, encoding: 'utf8', timeout: 60_000 });
  assert.equal(r.status, 1, r.stderr);
  assert.ok(!raw(r.stderr), JSON.stringify(r.stderr));
  assert.ok(r.stderr.includes('tools/list failed: ') && r.stderr.includes('\\u001b[1A\\u001b[2Kall servers wrapped\\u202etxt.exe'), r.stderr);
  assert.ok(r.stderr.includes('"notes\\u202egpj.exe"'), r.stderr);

  const dry = spawnSync(process.execPath, [CLI, 'wrap', '--trust-project', '--host', config, '--dry-run'], { cwd: w.project, env: w.env, encoding: 'utf8', timeout: 60_000 });
  assert.equal(dry.status, 0, dry.stderr);
  assert.ok(!raw(dry.stdout) && !raw(dry.stderr), JSON.stringify(dry.stdout));
  assert.ok(dry.stdout.includes('"notes\\u202egpj.exe": {'), dry.stdout);

  const d = spawnSync(process.execPath, [CLI, 'manifest', 'draft', '--timeout', '20s', '--', process.execPath, server], { env: w.env, encoding: 'utf8', timeout: 60_000 });
  assert.equal(d.status, 2, d.stderr);
  assert.ok(!raw(d.stderr), JSON.stringify(d.stderr));
  assert.ok(d.stderr.includes('\\u001b[1A'), d.stderr);
});
