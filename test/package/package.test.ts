// A real package: `npm pack` from a tree that was never built (prepack builds dist/), a tarball
// that holds what runs and nothing else, installed into an empty folder, and the `bin` run
// through npx: --version, init, and the gate in front of the shipped demo server.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync, type SpawnSyncOptions } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ROOT, tempDir } from '../helpers/cli.js';

const npm = (args: string[], opts: SpawnSyncOptions) => {
  const r = spawnSync('npm', args, { encoding: 'utf8', timeout: 900_000, ...opts });
  assert.equal(r.status, 0, `npm ${args.join(' ')}:\n${r.stdout}\n${r.stderr}`);
  return r;
};

test('npm pack builds and ships what runs; npx cloakpipe works from an empty folder', { timeout: 1_200_000 }, async () => {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { name: string; version: string };
  const work = tempDir('cloakpipe-pack-');

  // A checkout as a user clones it: sources only, no dist/ (dependencies linked for the build).
  const tree = join(work, 'tree');
  mkdirSync(tree);
  for (const p of ['src', 'bin', 'examples', 'package.json', 'package-lock.json', 'tsconfig.json', 'tsconfig.build.json', 'README.md', 'LICENSE']) {
    if (existsSync(join(ROOT, p))) cpSync(join(ROOT, p), join(tree, p), { recursive: true });
  }
  symlinkSync(join(ROOT, 'node_modules'), join(tree, 'node_modules'));
  npm(['pack', '--pack-destination', work, '--silent'], { cwd: tree });
  const tarball = join(work, `${pkg.name}-${pkg.version}.tgz`);
  assert.ok(existsSync(tarball), 'npm pack wrote the tarball');

  const listed = spawnSync('tar', ['tzf', tarball], { encoding: 'utf8' }).stdout.split('\n').filter(Boolean).map((p) => p.replace(/^package\//, ''));
  for (const needed of ['package.json', 'README.md', 'bin/cloakpipe.js', 'dist/src/cli/main.js', 'dist/src/cli/mcp-proxy.js', 'dist/src/ledger/verify/worker.js', 'dist/src/keys/signing-thread.js', 'dist/src/confine/watchdog-main.js', 'dist/examples/demo/server.js', 'examples/demo/manifest.yaml']) {
    assert.ok(listed.includes(needed), `the tarball ships ${needed}`);
  }
  const extra = listed.filter((p) => /^(test|bench|scripts|src|docs|confine|node_modules|dist\/test|dist\/bench)\//.test(p) || (p.endsWith('.ts') && !p.endsWith('.d.ts')) || p.startsWith('tsconfig'));
  assert.deepEqual(extra, [], 'no tests, benchmarks, sources or build files in the tarball');

  // An empty folder; the registry (or the local cache) supplies the dependencies.
  const app = join(work, 'app');
  mkdirSync(app);
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'an-empty-app', private: true }));
  // Install scripts are skipped and better-sqlite3's native binding is taken from this tree's
  // build: with no route to its prebuilt binaries npm would compile it again, for minutes, and
  // that is better-sqlite3's install, not this package's. Everything else comes from the tarball.
  npm(['install', '--prefer-offline', '--ignore-scripts', '--no-audit', '--no-fund', tarball], { cwd: app });
  const binding = join('node_modules', 'better-sqlite3', 'build', 'Release', 'better_sqlite3.node');
  mkdirSync(join(app, binding, '..'), { recursive: true });
  cpSync(join(ROOT, binding), join(app, binding));

  const npx = (args: string[]) => spawnSync('npx', ['--no-install', 'cloakpipe', ...args], { cwd: app, encoding: 'utf8', timeout: 120_000 });
  const v = npx(['--version']);
  assert.equal(v.status, 0, v.stderr);
  assert.equal(v.stdout, `cloakpipe ${pkg.version}\n`);

  const home = join(work, 'home');
  const init = npx(['init', '--home', home]);
  assert.equal(init.status, 0, init.stderr);
  for (const f of ['gate.pub', 'ledger.db', 'operations.db']) assert.ok(existsSync(join(home, f)), `init created ${f}`);
  assert.equal(statSync(join(home, 'gate.key')).mode & 0o077, 0, 'the gate key is private');

  // The gate from the package, in front of the demo server the package ships.
  const installed = join(app, 'node_modules', pkg.name);
  const transport = new StdioClientTransport({
    command: 'npx',
    args: ['--no-install', 'cloakpipe', 'mcp-proxy', '--home', home,
      '--manifest', join(installed, 'examples/demo/manifest.yaml'), '--policy', join(installed, 'examples/demo/policy.cedar'),
      '--context', join(installed, 'examples/demo/context.json'),
      '--upstream', `${process.execPath} ${join(installed, 'dist/examples/demo/server.js')}`],
    cwd: app,
    stderr: 'pipe',
  });
  const client = new Client({ name: 'package-test-host', version: '1' });
  await client.connect(transport);
  try {
    const res = (await client.callTool({ name: 'lookup_customer', arguments: { customer_id: 'C104200' } })) as { isError?: boolean; content: unknown[] };
    assert.notEqual(res.isError, true);
    assert.ok(res.content.length > 0);
    await assert.rejects(client.callTool({ name: 'lookup_customer', arguments: { customer_id: "C1' OR 1=1" } }), /cloakpipe refused/);
  } finally {
    await client.close();
  }
  const verify = npx(['verify', '--home', home]);
  assert.equal(verify.status, 0, verify.stderr);
});
