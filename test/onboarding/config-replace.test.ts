// How `cloakpipe wrap` / `unwrap` replace a host's config, through the real binary: a read-only
// config is refused, the mode and owner are kept, a host's write that lands while the new file is
// being written is kept (wrap refuses), and a kill at any instant leaves the config whole with its
// mode and no copy of it that others may reach, which the next run removes. Stops land as the
// temporary folder appears (inotify), so they hit the replace itself, not the start-up before it.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, readFileSync, readdirSync, statSync, symlinkSync, watch, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { CLI, EVERYTHING, tempDir } from '../helpers/cli.js';
import { put, run, trusted, world, type World } from './host-world.js';

const J = JSON.stringify;

// A run stopped by a test that then failed would hold the test process open: ended here.
const started = new Set<ChildProcess>();
after(() => {
  for (const c of started) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
});

/** A Claude Code project config, large enough that writing and checking it takes a while. */
function config(w: World, secret: string): { path: string; old: string } {
  const old = `{\n  "notes": "${'x'.repeat(8 * 1024 * 1024)}",\n  "mcpServers": {\n    "everything": { "command": ${J(process.execPath)}, "args": [${J(EVERYTHING)}, "stdio"], "env": { "API_KEY": ${J(secret)} } }\n  }\n}\n`;
  return { path: put(join(w.project, '.mcp.json'), old), old };
}

const TMP = (path: string) => new RegExp(`^\\.${basename(path).replace(/\./g, '\\.')}\\.[0-9a-f]{12}\\.tmp$`);
const leftovers = (path: string) => readdirSync(dirname(path)).filter((n) => TMP(path).test(n)).map((n) => join(dirname(path), n));

/** A copy left beside the config is in a folder only its owner may enter. */
function private_(t: string, why: string): void {
  const st = statSync(t);
  assert.ok(st.isDirectory(), `${why}: a folder`);
  assert.equal(st.mode & 0o777, 0o700, `${why}: no one else may enter it`);
  assert.equal(st.uid, process.geteuid!(), `${why}: ours`);
}

/**
 * Starts `cmd` and acts on it as the temporary folder beside `path` appears: `stop` SIGSTOPs it
 * (resolves with the temporary file when it was caught before the rename, else lets it finish
 * and resolves undefined); a number SIGKILLs it that many milliseconds later (Infinity: never).
 */
async function atTemp(w: World, cmd: 'wrap' | 'unwrap', path: string, act: 'stop' | number): Promise<{ child: ChildProcess; exited: Promise<number | null>; tmp?: string; stderr: () => string; since: () => number }> {
  const child = spawn(process.execPath, [CLI, ...trusted([cmd, '--host', 'claude-code'])], { cwd: w.project, env: w.env, stdio: ['ignore', 'ignore', 'pipe'] });
  started.add(child);
  let stderr = '';
  child.stderr!.on('data', (d) => (stderr += d));
  const before = readFileSync(path, 'utf8');
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  let tmp: string | undefined;
  let appeared = 0n;
  const seen = new Promise<string | undefined>((resolve) => {
    const watcher = watch(dirname(path), (_, name) => {
      if (typeof name !== 'string' || !TMP(path).test(name)) return;
      watcher.close();
      if (act === 'stop') child.kill('SIGSTOP');
      else if (Number.isFinite(act)) setTimeout(() => child.kill('SIGKILL'), act);
      appeared = process.hrtime.bigint();
      resolve(join(dirname(path), name));
    });
    void exited.then(() => (watcher.close(), resolve(undefined)));
  });
  tmp = await seen;
  if (act === 'stop' && tmp !== undefined && (!existsSync(tmp) || readFileSync(path, 'utf8') !== before)) {
    child.kill('SIGCONT'); // caught after the rename: not the instant wanted
    tmp = undefined;
  }
  return { child, exited, tmp, stderr: () => stderr, since: () => Number(process.hrtime.bigint() - appeared) / 1e6 };
}

/** Wrapped once (drafted against the real server), so later runs only rewrite the file. */
function wrappedOnce(w: World, path: string): string {
  const r = run(w, 'wrap', ['--host', 'claude-code']);
  assert.equal(r.status, 0, r.stderr);
  const u = run(w, 'unwrap', ['--host', 'claude-code']);
  assert.equal(u.status, 0, u.stderr);
  return readFileSync(path, 'utf8');
}

test('copies left by killed runs are removed by the next: a private folder, and a file as runs before ADR 083 amended left; a link of that name is not followed', () => {
  const w = world();
  const path = put(join(w.project, '.mcp.json'), `{\n  "mcpServers": {\n    "everything": { "command": ${J(process.execPath)}, "args": [${J(EVERYTHING)}, "stdio"] }\n  }\n}\n`);
  const folder = join(w.project, '..mcp.json.0123456789ab.tmp');
  mkdirSync(folder, 0o700);
  writeFileSync(join(folder, '.mcp.json'), 'CANARY-left-copy');
  const file = put(join(w.project, '..mcp.json.ba9876543210.tmp'), 'CANARY-left-copy');
  const elsewhere = tempDir('cloakpipe-elsewhere-');
  writeFileSync(join(elsewhere, 'kept'), 'not ours to remove');
  const link = join(w.project, '..mcp.json.aaaaaaaaaaaa.tmp');
  symlinkSync(elsewhere, link);
  const r = run(w, 'wrap', ['--host', 'claude-code', '--dry-run']);
  assert.equal(r.status, 0, r.stderr);
  assert.ok(r.stderr.includes(`would remove ${folder}`) && r.stderr.includes(`would remove ${file}`), r.stderr);
  assert.ok(existsSync(folder) && existsSync(file), 'a dry run removes nothing');
  const u = run(w, 'wrap', ['--host', 'claude-code']);
  assert.equal(u.status, 0, u.stderr);
  assert.ok(u.stderr.includes(`removed ${folder}`) && u.stderr.includes(`removed ${file}`), u.stderr);
  assert.ok(!existsSync(folder) && !existsSync(file), 'both removed');
  assert.ok(!u.stderr.includes(link), u.stderr);
  assert.equal(readFileSync(join(elsewhere, 'kept'), 'utf8'), 'not ours to remove', 'the link was not followed');
  assert.ok(!u.stderr.includes('CANARY') && !u.stdout.includes('CANARY'));
});

test('a read-only (0444) config is refused, named, and left byte for byte with its mode', () => {
  const w = world();
  const path = put(join(w.project, '.mcp.json'), `{\n  "mcpServers": {\n    "everything": { "command": ${J(process.execPath)}, "args": [${J(EVERYTHING)}, "stdio"] }\n  }\n}\n`);
  const before = readFileSync(path, 'utf8');
  chmodSync(path, 0o444);
  const r = run(w, 'wrap', ['--host', 'claude-code']);
  assert.equal(r.status, 1, r.stderr);
  assert.ok(r.stderr.includes(`${path}: read-only (mode 0444); left as is`), r.stderr);
  assert.equal(readFileSync(path, 'utf8'), before);
  assert.equal(statSync(path).mode & 0o7777, 0o444);
});

test("wrap and unwrap keep the config's mode and its owner and group", () => {
  const w = world();
  const path = put(join(w.project, '.mcp.json'), `{\n  "mcpServers": {\n    "everything": { "command": ${J(process.execPath)}, "args": [${J(EVERYTHING)}, "stdio"] }\n  }\n}\n`);
  const before = readFileSync(path, 'utf8');
  chmodSync(path, 0o640);
  // The user's file, wrapped by root (sudo): the host, run as the user, must still own it.
  chownSync(path, 4242, 4343);
  for (const cmd of ['wrap', 'unwrap'] as const) {
    const r = run(w, cmd, ['--host', 'claude-code']);
    assert.equal(r.status, 0, r.stderr);
    const st = statSync(path);
    assert.deepEqual([st.mode & 0o7777, st.uid, st.gid], [0o640, 4242, 4343], `${cmd}: mode, owner and group kept`);
  }
  assert.equal(readFileSync(path, 'utf8'), before);
});

test("a host's write that lands while wrap writes the new file is kept: wrap refuses, the file is the host's", async () => {
  const w = world();
  const { path } = config(w, 'CANARY-host-write');
  const old = wrappedOnce(w, path);
  const hostSaved = old.replace('"notes": "x', '"notes": "saved by the host x');
  let tries = 0;
  for (; tries < 40; tries++) {
    const s = await atTemp(w, 'wrap', path, 'stop');
    if (s.tmp === undefined) {
      await s.exited;
      if (readFileSync(path, 'utf8') !== old) assert.equal(run(w, 'unwrap', ['--host', 'claude-code']).status, 0);
      continue;
    }
    // The host saves its settings in place, as Electron's fs.writeFile does.
    writeFileSync(path, hostSaved);
    s.child.kill('SIGCONT');
    const code = await s.exited;
    assert.equal(code, 1, s.stderr());
    assert.ok(s.stderr().includes(`${path} changed while wrap ran; left as is`), s.stderr());
    assert.equal(readFileSync(path, 'utf8'), hostSaved, "the host's write kept");
    assert.deepEqual(leftovers(path), [], 'no temporary file left');
    break;
  }
  assert.ok(tries < 40, 'a stop landed between the temporary file and the rename');
});

test('SIGKILL at random instants of the replace: the file is whole with its mode, a copy left beside it is reachable by its owner only, and the next run removes it', async () => {
  const w = world();
  const secret = 'CANARY-env-secret-7f3a';
  const { path } = config(w, secret);
  const old = wrappedOnce(w, path);
  chmodSync(path, 0o644); // readable by others, as configs usually are
  // A stop as the copy's folder appears: no one else may enter it from its creation.
  let stopped = false;
  for (let i = 0; i < 40 && !stopped; i++) {
    const s = await atTemp(w, 'wrap', path, 'stop');
    if (s.tmp === undefined) {
      await s.exited;
      if (readFileSync(path, 'utf8') !== old) assert.equal(run(w, 'unwrap', ['--host', 'claude-code']).status, 0);
      continue;
    }
    stopped = true;
    private_(s.tmp, 'the copy of the config');
    s.child.kill('SIGKILL');
    await s.exited;
    assert.deepEqual(leftovers(path), [s.tmp], 'the killed run left its copy');
  }
  assert.ok(stopped, 'a stop landed before the rename');
  const seen = { before: 0, after: 0, left: 1 };
  const wrapped = (() => {
    const r = run(w, 'wrap', ['--host', 'claude-code']);
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stderr, /removed [^\n]*\.mcp\.json\.[0-9a-f]{12}\.tmp, a copy of the config left by a wrap or unwrap that was stopped while replacing it/);
    assert.deepEqual(leftovers(path), [], 'the next run removed it');
    return readFileSync(path, 'utf8');
  })();
  // How long the replace takes here, from its temporary file to the end of the run, so the
  // kills can be spread across it (not a timing assertion).
  const timed = await atTemp(w, 'unwrap', path, Infinity);
  await timed.exited;
  const span = timed.since();
  for (let i = 0; i < 16; i++) {
    const from = readFileSync(path, 'utf8');
    const s = await atTemp(w, from === old ? 'wrap' : 'unwrap', path, Math.random() * span * 1.2);
    await s.exited;
    const now = readFileSync(path, 'utf8');
    assert.ok(now === old || now === wrapped, `kill ${i}: the file is whole`);
    assert.equal(statSync(path).mode & 0o7777, 0o644, `kill ${i}: its mode kept`);
    if (now === from) seen.before++;
    else seen.after++;
    for (const t of leftovers(path)) {
      seen.left++;
      private_(t, `kill ${i}: a copy left`);
    }
  }
  console.log(`kills over ${span.toFixed(0)} ms: ${seen.before} before the rename, ${seen.after} after; ${seen.left} copies left`);
  const r = run(w, 'unwrap', ['--host', 'claude-code']);
  assert.equal(r.status, 0, r.stderr);
  assert.deepEqual(leftovers(path), [], 'the next run removed every copy');
  assert.equal(readFileSync(path, 'utf8'), old);
  assert.ok(!r.stderr.includes(secret) && !r.stdout.includes(secret));
});
