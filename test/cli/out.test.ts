// Where the files of `--out` go (src/util/out/, openOutput), through the real binary:
// a path is replaced whole, through a symbolic link, never the link itself; standard output is
// written where the shell opened it (`--out /dev/stdout >> log` appends, `| gzip` streams), and
// the command's own lines then go to stderr; a descriptor past 2 is refused, since cloakpipe
// cannot tell one its caller gave from one of its own. A signal that ends an export takes back
// its temporary file.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { closeSync, existsSync, lstatSync, mkdirSync, openSync, readdirSync, readFileSync, readlinkSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { CLI, MEMORY, cloakpipe, makeHome, tempDir } from '../helpers/cli.js';
import { session } from '../ledger/session.js';
import { fixture } from '../ledger/epoch-fixture.js';

const run = (args: string[], stdio: (number | 'pipe' | 'ignore')[] = ['ignore', 'pipe', 'pipe']) =>
  spawnSync(process.execPath, [CLI, ...args], { stdio, encoding: 'utf8', timeout: 120_000 });

/** A home with one gate session's entries, and its public key's path. */
async function home(): Promise<{ home: string; pub: string }> {
  const h = makeHome();
  await session(h);
  return { home: h, pub: join(h, 'gate.pub') };
}

const verifyExport = (file: string, pub: string) => cloakpipe(['verify', '--ledger', file, '--public-key', pub], { timeout: 120_000 });

test('ledger checkpoint --out /dev/stdout and /dev/fd/1 append to a log opened with >>: what it held is kept, the lines about the note go to stderr', async () => {
  const { home: h } = await home();
  const dir = tempDir();
  const log = join(dir, 'checkpoints.log');
  writeFileSync(log, 'earlier\n');
  const append = openSync(log, 'a');
  try {
    for (const path of ['/dev/stdout', '/dev/fd/1']) {
      const r = run(['ledger', 'checkpoint', '--home', h, '--out', path], ['ignore', append, 'pipe']);
      assert.equal(r.status, 0, r.stderr);
      assert.equal(r.stderr, `checkpoint of ${r.stderr.match(/of (\d+) entries/)?.[1]} entries written to ${path}\n`);
    }
  } finally {
    closeSync(append);
  }
  const [before, first, second, ...rest] = readFileSync(log, 'utf8').split(/^(?=cloakpipe\.ledger\/)/m);
  assert.equal(before, 'earlier\n');
  assert.deepEqual(rest, []);
  for (const note of [first!, second!]) {
    assert.match(note, /\u2014 \S+ \S+\n$/, 'a note and nothing after it');
    const held = join(dir, 'held.txt');
    writeFileSync(held, note);
    const ok = cloakpipe(['verify', '--home', h, '--checkpoint', held], { timeout: 120_000 });
    assert.equal(ok.status, 0, ok.stdout + ok.stderr);
  }
});

test('ledger export --out /dev/stdout: into a pipe the export alone, into a log opened with >> after what it held; each verifies', async () => {
  const { home: h, pub } = await home();
  const dir = tempDir();
  const piped = run(['ledger', 'export', '--home', h, '--out', '/dev/stdout']);
  assert.equal(piped.status, 0, piped.stderr);
  assert.match(piped.stderr, /^exported \d+ entries and 0 anchors to \/dev\/stdout\n$/);
  const fromPipe = join(dir, 'piped.jsonl');
  writeFileSync(fromPipe, piped.stdout);
  const ok = verifyExport(fromPipe, pub);
  assert.equal(ok.status, 0, ok.stdout + ok.stderr);

  const log = join(dir, 'exports.log');
  writeFileSync(log, 'earlier\n');
  const append = openSync(log, 'a');
  try {
    const r = run(['ledger', 'export', '--home', h, '--out', '/dev/stdout', '--json'], ['ignore', append, 'pipe']);
    assert.equal(r.status, 0, r.stderr);
    assert.equal(JSON.parse(r.stderr).out, '/dev/stdout');
  } finally {
    closeSync(append);
  }
  const text = readFileSync(log, 'utf8');
  assert.ok(text.startsWith('earlier\n'), 'what the log held is kept');
  // The same ledger: the same lines but the header's export time.
  const body = (t: string) => t.split('\n').slice(1);
  assert.deepEqual(body(text.slice('earlier\n'.length)), body(piped.stdout));
  // /dev/stdout is still the link it was (the export used to be renamed over the path it named).
  assert.ok(lstatSync('/dev/stdout').isSymbolicLink());
});

test('--out through a symbolic link replaces the file it points to, and the link stays a link', async () => {
  const { home: h, pub } = await home();
  const dir = tempDir();
  mkdirSync(join(dir, 'kept'));
  const real = join(dir, 'kept', 'ledger.jsonl');
  writeFileSync(real, 'an older export\n');
  const link = join(dir, 'latest.jsonl');
  symlinkSync(real, link);
  const r = cloakpipe(['ledger', 'export', '--home', h, '--out', link]);
  assert.equal(r.status, 0, r.stderr);
  assert.ok(lstatSync(link).isSymbolicLink(), 'the link is not replaced by a file');
  assert.equal(readlinkSync(link), real);
  assert.ok(verifyExport(real, pub).status === 0, 'the export is in the file the link names');

  const cp = cloakpipe(['ledger', 'checkpoint', '--home', h, '--out', link]);
  assert.equal(cp.status, 0, cp.stderr);
  assert.ok(lstatSync(link).isSymbolicLink());
  assert.match(readFileSync(real, 'utf8'), /^cloakpipe\.ledger\//);
});

test('--out naming a descriptor past 2 is refused, nothing written: cloakpipe cannot tell one its caller gave from its own', async () => {
  const { home: h } = await home();
  const dir = tempDir();
  const given = join(dir, 'given.log');
  writeFileSync(given, 'earlier\n');
  const fd = openSync(given, 'a');
  const before = cloakpipe(['ledger', 'show', '--json', '--home', h]).stdout;
  try {
    // 3 is a file the caller gave (3>>given.log); 6, 7 and 12 are the command's own, Node's
    // internal pipes: a write into one crashed the process (SIGSEGV), or was lost.
    for (const path of ['/dev/fd/3', '/proc/self/fd/3', '/dev/fd/6', '/dev//fd/7', '/tmp/../dev/fd/12', '/dev/fd/40']) {
      for (const args of [['ledger', 'checkpoint', '--home', h, '--out', path], ['ledger', 'export', '--home', h, '--out', path]]) {
        const r = run(args, ['ignore', 'pipe', 'pipe', fd]);
        assert.equal(r.status, 2, `${args.join(' ')}: ${r.stdout}${r.stderr}`);
        assert.match(r.stderr, /^cloakpipe: --out \S+: descriptor \d+ may be one cloakpipe holds itself; give a file's path, or \/dev\/stdout\n$/, path);
        assert.equal(r.stdout, '', path);
      }
    }
  } finally {
    closeSync(fd);
  }
  assert.equal(readFileSync(given, 'utf8'), 'earlier\n');
  assert.equal(cloakpipe(['ledger', 'show', '--json', '--home', h]).stdout, before);
  const ok = cloakpipe(['verify', '--home', h], { timeout: 120_000 });
  assert.equal(ok.status, 0, ok.stdout + ok.stderr);
});

test('--out through symbolic links to a descriptor is that descriptor: past 2 refused, nothing written; a link to /dev/stdout writes stdout, a socket too', async () => {
  const { home: h, pub } = await home();
  const dir = tempDir();
  symlinkSync('/dev/fd/11', join(dir, 'to-11'));
  symlinkSync(join(dir, 'to-11'), join(dir, 'to-to-11'));
  symlinkSync('/dev/fd', join(dir, 'fds'));
  symlinkSync('fds/12', join(dir, 'relative-12'));
  symlinkSync('/proc/self/fd', join(dir, 'own-fds'));
  // 11 and 12 are the command's own (Node's internal pipes): through a link, a checkpoint into
  // one crashed the process (SIGSEGV).
  for (const [name, fd] of [['to-11', 11], ['to-to-11', 11], ['fds/12', 12], ['relative-12', 12], ['own-fds/13', 13]] as const) {
    const path = join(dir, name);
    for (const args of [['ledger', 'checkpoint', '--home', h, '--out', path], ['ledger', 'export', '--home', h, '--out', path]]) {
      const r = run(args);
      assert.equal(r.status, 2, `${args.join(' ')}: ${r.signal ?? ''} ${r.stdout}${r.stderr}`);
      assert.equal(r.stderr, `cloakpipe: --out ${path}: descriptor ${fd} may be one cloakpipe holds itself; give a file's path, or /dev/stdout\n`);
      assert.equal(r.stdout, '');
    }
  }
  // The test's stdout pipe is a socket (libuv's socketpair): opened again by its path, ENXIO.
  for (const name of ['out', 'fds-1']) {
    const path = join(dir, name);
    if (name === 'out') symlinkSync('/dev/stdout', path);
    else symlinkSync(join(dir, 'fds', '1'), path);
    const r = run(['ledger', 'export', '--home', h, '--out', path]);
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stderr, `exported ${r.stderr.match(/exported (\d+) entries/)?.[1]} entries and 0 anchors to ${path}\n`, 'what the command says goes to stderr');
    const file = join(dir, `${name}.jsonl`);
    writeFileSync(file, r.stdout);
    assert.equal(verifyExport(file, pub).status, 0, 'the export came through stdout whole');
    assert.ok(lstatSync(path).isSymbolicLink());
  }
});

test('manifest draft --out /dev/stdout: the manifest on stdout and the policy where --policy-out says; without it, exit 2 and no /dev/stdout.cedar', () => {
  const dir = tempDir();
  const bare = run(['manifest', 'draft', '--out', '/dev/stdout', '--', process.execPath, MEMORY]);
  assert.equal(bare.status, 2, bare.stdout + bare.stderr);
  assert.equal(bare.stderr, 'cloakpipe manifest: --out /dev/stdout names a descriptor: give --policy-out too\n');
  assert.ok(!existsSync('/dev/stdout.cedar'));
  const policy = join(dir, 'policy.cedar');
  const r = run(['manifest', 'draft', '--out', '/dev/stdout', '--policy-out', policy, '--', process.execPath, MEMORY]);
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /^# Drafted by `cloakpipe manifest draft`[^]*\nversion: 1\n[^]*\ntools:\n/);
  assert.match(readFileSync(policy, 'utf8'), /^\/\/ Drafted by `cloakpipe manifest draft`[^]*\npermit \(/);
  assert.match(r.stderr, /tools → \/dev\/stdout, policy → /);
});

test('a signal (Ctrl-C, SIGTERM, SIGHUP) during ledger export --out F: its temporary file is removed, F keeps what it held, the command ends by that signal', async () => {
  const h = makeHome();
  const f = fixture({ home: h });
  f.add(60_000); // an export that takes a while
  f.db.close();
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    let caught = false;
    // A probe that comes too late (the export finished first, on a busy machine) tries again.
    for (let attempt = 0; attempt < 5 && !caught; attempt++) {
      const dir = tempDir();
      const target = join(dir, 'ledger.jsonl');
      writeFileSync(target, 'an older export\n');
      const child = spawn(process.execPath, [CLI, 'ledger', 'export', '--home', h, '--out', target], { stdio: ['ignore', 'pipe', 'pipe'] });
      let output = '';
      child.stdout.setEncoding('utf8').on('data', (d) => (output += d));
      child.stderr.setEncoding('utf8').on('data', (d) => (output += d));
      const closed = once(child, 'close');
      // Stopped as soon as its temporary file appears, then signalled: the signal lands mid-export.
      const temporary = () => readdirSync(dir).filter((f) => f.endsWith('.tmp'));
      while (temporary().length === 0 && child.exitCode === null) await sleep(1);
      child.kill('SIGSTOP');
      caught = temporary().length === 1;
      if (caught) child.kill(signal);
      child.kill('SIGCONT');
      const [code, ended] = (await closed) as [number | null, string | null];
      if (!caught) continue;
      assert.deepEqual([code, ended, output], [null, signal, ''], signal);
      assert.deepEqual(readdirSync(dir), ['ledger.jsonl'], `${signal}: no temporary file left`);
      assert.equal(readFileSync(target, 'utf8'), 'an older export\n');
    }
    assert.ok(caught, `${signal}: the export was never caught while it was being written`);
  }
});
