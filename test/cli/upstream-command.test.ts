// Naming the upstream without `--`, for clients that cut their own argv at the first `--` (the
// MCP Inspector CLI): `--upstream "CMD ARGS"` split as a POSIX shell splits words (checked
// against /bin/sh itself), and `--config FILE`; both driven through the real binary by the
// official SDK client against server-everything.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { CLI, EVERYTHING, PERMIT_ALL, cloakpipe, makeHome, tempDir, writeFiles } from '../helpers/cli.js';
import { splitCommandLine } from '../../src/cli/upstream-command.js';
import { UsageError } from '../../src/cli/args.js';

const MANIFEST = 'version: 1\nrelease: upstream-flag@1\ntools:\n  echo:\n    effect: read\n    arguments:\n      message: { type: string, max_len: 200, required: true }\n';

/** The words /bin/sh makes of `line` (after a fixed first word), or null when sh refuses it. */
function shWords(line: string): string[] | null {
  const r = spawnSync('/bin/sh', ['-c', `printf '%s\\0' FIRST ${line}`], { encoding: 'utf8' });
  if (r.status !== 0) return null;
  return r.stdout.split('\0').slice(1, -1);
}

test('--upstream splits words exactly as /bin/sh does, or refuses what a shell would interpret', () => {
  let compared = 0;
  const alphabet = fc.constantFrom('a', 'b', '1', ' ', ' ', '\t', "'", '"', '\\', '-', '=', '/', '.', ':', '$', '*', '|', '~', '#', 'é');
  fc.assert(
    fc.property(fc.array(alphabet, { minLength: 1, maxLength: 14 }), (chars) => {
      const line = chars.join('');
      let ours: string[] | null;
      try {
        ours = splitCommandLine(line);
      } catch (e) {
        assert.ok(e instanceof UsageError, String(e));
        return; // refused (unbalanced quote, shell syntax, no words): never a silent misreading
      }
      assert.deepEqual(ours, shWords(line), JSON.stringify(line));
      compared++;
    }),
    { numRuns: 300 },
  );
  assert.ok(compared >= 30, `only ${compared} inputs were compared with /bin/sh`);
});

test('--upstream: quoting keeps spaces and metacharacters literal; shell syntax is refused, named', () => {
  assert.deepEqual(splitCommandLine(`node "/opt/my server/index.js" --root '/data/a b' x\\ y ''`), ['node', '/opt/my server/index.js', '--root', '/data/a b', 'x y', '']);
  assert.deepEqual(splitCommandLine(`srv --pattern '*.txt' --price '$5' --tag '#1'`), ['srv', '--pattern', '*.txt', '--price', '$5', '--tag', '#1']);
  for (const line of ['srv $HOME', 'srv *.txt', 'srv | tee log', 'srv; rm -rf x', 'srv ~/data', 'srv "$(id)"', 'srv `id`', "srv 'open", 'srv "open', '   ']) {
    assert.throws(() => splitCommandLine(line), UsageError, line);
  }
});

async function connect(args: string[], cwd?: string) {
  const transport = new StdioClientTransport({ command: process.execPath, args: [CLI, ...args], stderr: 'pipe', cwd });
  let err = '';
  transport.stderr?.on('data', (d: Buffer) => (err += d.toString()));
  const client = new Client({ name: 'no-double-dash-host', version: '1' });
  try {
    await client.connect(transport);
  } catch (e) {
    throw new Error(`${(e as Error).message}\n${err}`);
  }
  return client;
}

test('a host that passes no -- reaches the server through --upstream', async () => {
  const f = writeFiles({ 'm.yaml': MANIFEST, 'p.cedar': PERMIT_ALL });
  const dir = join(tempDir(), 'server dir');
  mkdirSync(dir);
  // A path with a space, quoted inside the one --upstream string.
  writeFileSync(join(dir, 'launch.mjs'), `await import(${JSON.stringify(EVERYTHING)});\n`);
  const client = await connect(['mcp-proxy', '--home', makeHome(), '--manifest', f['m.yaml'], '--policy', f['p.cedar'], '--upstream', `${process.execPath} "${join(dir, 'launch.mjs')}" stdio`]);
  try {
    const res = await client.callTool({ name: 'echo', arguments: { message: 'no double dash' } });
    assert.deepEqual(res.content, [{ type: 'text', text: 'Echo: no double dash' }]);
  } finally {
    await client.close();
  }
});

test('--config names the upstream and the flags, with paths relative to the file; command-line flags win', async () => {
  const dir = join(tempDir(), 'cfg');
  mkdirSync(dir);
  writeFileSync(join(dir, 'manifest.yaml'), MANIFEST);
  writeFileSync(join(dir, 'policy.cedar'), PERMIT_ALL);
  writeFileSync(join(dir, 'deny.cedar'), 'forbid (principal, action, resource);\n');
  writeFileSync(join(dir, 'gate.json'), JSON.stringify({ command: process.execPath, args: [EVERYTHING, 'stdio'], flags: { manifest: 'manifest.yaml', policy: './deny.cedar', 'call-timeout': '30s' } }, null, 2));
  // The file's policy denies everything; the command line's --policy wins over it.
  const client = await connect(['mcp-proxy', '--config', join(dir, 'gate.json'), '--home', makeHome(), '--policy', join(dir, 'policy.cedar')], tempDir());
  try {
    const res = await client.callTool({ name: 'echo', arguments: { message: 'configured' } });
    assert.deepEqual(res.content, [{ type: 'text', text: 'Echo: configured' }]);
    await assert.rejects(client.callTool({ name: 'get-sum', arguments: { a: 1, b: 2 } }), /undeclared_tool|not declared/);
  } finally {
    await client.close();
  }
});

test('--config and --upstream errors are usage errors (exit 2), named', () => {
  const f = writeFiles({
    'm.yaml': MANIFEST,
    'p.cedar': PERMIT_ALL,
    'typo.json': { command: 'node', flags: { manfest: 'm.yaml' } },
    'broken.json': '{\n  "command": "node",\n  "args": ["a"]\n  "flags": {}\n}',
    'extra.json': { command: 'node', cwd: '/tmp' },
  });
  const cases: [string[], RegExp][] = [
    [['--config', f['typo.json']], /unknown option --manfest \(did you mean --manifest\?\)/],
    [['--config', f['broken.json']], /broken\.json is not strict JSON: line 4, column 3/],
    [['--config', f['extra.json']], /unknown key "cwd"/],
    [['--manifest', f['m.yaml'], '--policy', f['p.cedar'], '--upstream', 'node a', '--', 'node', 'b'], /named twice/],
    [['--manifest', f['m.yaml'], '--policy', f['p.cedar'], '--upstream', 'node $HOME'], /no shell runs the upstream/],
    [['--manifest', f['m.yaml'], '--policy', f['p.cedar']], /missing upstream command/],
  ];
  for (const [argv, expected] of cases) {
    const r = cloakpipe(['mcp-proxy', '--home', makeHome(), ...argv], { input: '' });
    assert.equal(r.status, 2, `${argv.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, expected);
  }
});
