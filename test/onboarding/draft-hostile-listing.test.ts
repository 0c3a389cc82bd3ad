// `cloakpipe manifest draft` against a server whose tools/list is built to hurt the drafter
// (test/helpers/listing-server.ts): the draft still loads and passes policy check, and what it
// could not turn into rules is named in it; a server that never answers is given up on, with
// everything it started.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { spawn } from 'node:child_process';
import { parse as parseYaml } from 'yaml';
import { CLI, ROOT, cloakpipe, helperScript, tempDir } from '../helpers/cli.js';
import { draftFromTools } from '../../src/onboarding/draft.js';
import { buildManifest } from '../../src/contract/manifest.js';

function draft(how: string[]) {
  const dir = tempDir('cloakpipe-draft-');
  const out = join(dir, 'm.yaml');
  const r = cloakpipe(['manifest', 'draft', '--out', out, '--', process.execPath, helperScript('listing-server.js'), ...how], { timeout: 120_000 });
  assert.equal(r.status, 0, r.stderr);
  const check = cloakpipe(['policy', 'check', '--manifest', out, '--policy', join(dir, 'm.cedar')]);
  assert.equal(check.status, 0, `policy check: ${check.stdout}${check.stderr}`);
  return readFileSync(out, 'utf8');
}

test('an argument whose arrays nest a thousand deep: drafted to a bounded depth, the rest named as unchecked', () => {
  const manifest = draft(['deep', '1000']);
  const rows = (parseYaml(manifest) as { tools: { nested: { arguments: { rows: unknown } } } }).tools.nested.arguments.rows;
  let depth = 0;
  for (let r = rows as { type?: string; items?: unknown }; r.items !== undefined; r = r.items as typeof r) depth++;
  assert.equal(depth, 16);
  assert.match(manifest, /# v1 cannot hold: rows(\[\]){16}: items nests arrays deeper than 16; the elements are left unchecked/);
});

/** The process is running (a zombie waiting for its reaper has ended). */
const running = (pid: number) => existsSync(`/proc/${pid}`) && !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));

test('a server started through a shell that never answers: reported at --timeout, and the child it started, which held its pipes, is ended too', () => {
  const pidFile = join(tempDir('cloakpipe-draft-'), 'child.pid');
  // The shell's child keeps the shell's stdout; killing the shell alone left it holding the pipe.
  const r = cloakpipe(['manifest', 'draft', '--timeout', '2s', '--', 'sh', '-c', `sleep 600 & echo $! > ${pidFile}; wait`], { timeout: 60_000 });
  const child = Number(readFileSync(pidFile, 'utf8'));
  try {
    assert.equal(r.status, 2, `${r.error ?? ''}\n${r.stderr}`);
    assert.match(r.stderr, /the server did not answer tools\/list within 2000 ms/);
    assert.ok(!running(child), 'the server\'s child was ended');
  } finally {
    if (running(child)) process.kill(child, 'SIGKILL');
  }
});

test('a tools/list answer longer than the 10 MiB a line may take: named as a failed tools/list, exit 2', () => {
  const r = cloakpipe(['manifest', 'draft', '--', process.execPath, helperScript('listing-server.js'), 'many', '150000'], { timeout: 120_000 });
  assert.equal(r.status, 2, r.stderr);
  assert.match(r.stderr, /^cloakpipe manifest draft: tools\/list failed: MCP error -32000: Connection closed\n$/);
});

test('a required argument the schema gives no property, named like a member of every object (toString, constructor): declared, never dropped', () => {
  const d = draftFromTools([{ name: 'lookup', annotations: { readOnlyHint: true }, inputSchema: { type: 'object', properties: { q: { type: 'string' } }, required: ['q', 'toString', 'constructor'] } }], { release: 'k@1', source: 'test' });
  const loaded = buildManifest(parseYaml(d.manifest, { schema: 'core', uniqueKeys: true }));
  assert.deepEqual(Object.keys(loaded.manifest.tools.lookup.arguments).sort(), ['constructor', 'q', 'toString']);
  for (const r of ['toString', 'constructor']) assert.match(d.manifest, new RegExp(`# v1 cannot hold: required ${r} has no property schema; declared without rules`));
});

/** The processes `pid` started. */
const childrenOf = (pid: number) => (existsSync(`/proc/${pid}/task/${pid}/children`) ? readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number) : []);
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** The process has exec'd sleep (not a shell's fork on its way there). */
const isSleep = (pid: number) => {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'sleep';
  } catch {
    return false;
  }
};

test('Ctrl-C while a server is listing its tools reaches the server and what it started, as it reaches every process of the terminal', async () => {
  // The command in a group of its own, as a terminal runs it; Ctrl-C is SIGINT to that group.
  const cp = spawn(process.execPath, [CLI, 'manifest', 'draft', '--timeout', '10m', '--', 'sh', '-c', 'sleep 600; true'], { detached: true, stdio: 'ignore' });
  const exited = new Promise((r) => cp.once('exit', r));
  let sleeper: number | undefined;
  try {
    // Only once the shell's child is `sleep`: between its fork and its exec it still has the
    // shell's SIGINT handler (dash -c catches SIGINT), and a Ctrl-C there is the shell's, lost
    // on exec, whoever sends it. Signalled in that window, the sleep lived on (1 run in 3 when
    // signalled as soon as the child existed; under load the window is wider).
    for (let i = 0; i < 600 && sleeper === undefined; i++) {
      sleeper = childrenOf(cp.pid!).flatMap(childrenOf).find(isSleep);
      if (sleeper === undefined) await pause(50);
    }
    assert.ok(sleeper !== undefined, 'the server started its child');
    process.kill(-cp.pid!, 'SIGINT');
    await exited;
    for (let i = 0; i < 200 && running(sleeper); i++) await pause(50);
    assert.ok(!running(sleeper), 'the server\'s child heard Ctrl-C');
  } finally {
    if (sleeper !== undefined && running(sleeper)) process.kill(sleeper, 'SIGKILL');
    if (cp.exitCode === null && cp.signalCode === null) cp.kill('SIGKILL');
  }
});

test('a tool listed twice with two definitions (a read on one page, a destructive write on the next) is not declared: a host may use either; one listed twice as one definition is declared', () => {
  const manifest = draft(['twice']);
  const tools = (parseYaml(manifest) as { tools: Record<string, unknown> }).tools;
  assert.deepEqual(Object.keys(tools), ['same']);
  assert.match(manifest, /# NOT DECLARED: "erase": listed twice with two definitions; a host may use either: review the server, declare it by hand/);
  assert.doesNotMatch(manifest, /NOT DECLARED: "same"/);
});

test('a server that pages tools/list without end (a new cursor each time, 512 KiB a page) is given up on at 64 MiB of tools, named, exit 2, its memory bounded', () => {
  const count = join(tempDir(), 'pages');
  // A heap of 400 MiB: reading 1,000 such pages, each kept twice, ran out of it.
  const r = cloakpipe(['manifest', 'draft', '--timeout', '5m', '--', process.execPath, join(ROOT, 'dist/test/onboarding/endless-pages-server.js'), count], {
    env: { ...process.env, NODE_OPTIONS: '--max-old-space-size=400' },
    timeout: 300_000,
  });
  assert.equal(r.status, 2, r.stderr);
  assert.match(r.stderr, /^cloakpipe manifest draft: tools\/list sent more than 64 MiB of tools in \d+ pages; not drafted\n$/);
  const served = Number(readFileSync(count, 'utf8'));
  assert.ok(served > 100 && served <= 129, `pages served: ${served}`);
});
