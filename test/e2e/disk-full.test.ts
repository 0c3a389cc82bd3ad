// A disk that fills up under the real gate (a tmpfs of a few megabytes holds its home; the
// kernel's ENOSPC and SQLite's handling of it, neither ours).
// - Fail closed: a call the gate cannot record is refused and never reaches the tool. A write
//   whose settlement the full disk lost was answered once and never runs again (a retry replays
//   that answer or is refused as unknown). Once there is space the gate records again, without a
//   restart, and the chain verifies.
// - A gate that cannot start for want of space says so; it does not call its intact database
//   unreadable.
// - `wrap` with its home on a full disk leaves the host's config byte for byte, says why, and
//   never leaves a manifest without its policy (a later wrap keeps a manifest as drafted).
// - `init` on a full disk leaves none of its files: a key without its ledger would make every
//   later init refuse to overwrite it.
// - `manifest draft --out` replaces its files whole or not at all: a policy cut short could still
//   load, without its last rules.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, statSync, writeFileSync, existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { CLI, EVERYTHING, cloakpipe, fixtureFiles, tempDir } from '../helpers/cli.js';
import { call, gateArgs, readRecord, recordingUpstream, startGate, type Outcome, type RunningGate } from '../helpers/gate.js';
import { CONTEXT, MANIFEST } from '../helpers/recording-gate.js';
import { mountSmallDisk, smallDiskSkip, type SmallDisk } from '../helpers/small-disk.js';

/** A 16 MB disk for this test, unmounted after it. */
function smallDisk(t: TestContext): SmallDisk {
  const disk = mountSmallDisk(16);
  t.after(() => disk.unmount());
  return disk;
}

/** A gate home on that disk, with the approvals catalogue's manifest. */
function homeOn(disk: SmallDisk) {
  const home = join(disk.dir, 'home');
  const init = cloakpipe(['init', '--home', home]);
  assert.equal(init.status, 0, init.stderr);
  return fixtureFiles('cloakpipe-disk-full-', { manifest: MANIFEST, context: CONTEXT, home });
}

/** The home's chain and every signature verify. */
function assertVerifies(home: string): void {
  const v = cloakpipe(['verify', '--home', home]);
  assert.equal(v.status, 0, v.stdout + v.stderr);
}

const write = (g: RunningGate, key: string): Promise<Outcome> => call(g, 'write_note', { text: `note ${key}`, key }, undefined, 20_000);
const ran = (record: string, key: string) => readRecord(record).filter((r) => r.arguments.key === key).length;
const refusal = (o: Outcome) => (o.ok ? 'answered' : o.reason);
/** A retry of a write that ran: the answer the host saw, replayed, or refused as unknown; never a second run. */
function settledOrUnknown(retry: Outcome, seen: Outcome): void {
  if (retry.ok) assert.equal(retry.text, (seen as { text: string }).text, 'a replay is the answer the host saw');
  else assert.equal(retry.reason, 'reconcile_before_retry', 'its settlement was lost: refused, never run again');
}

test('a full disk: every call is refused (fail_closed) and none reaches the tool; when space is back the gate records again without a restart; the chain verifies', smallDiskSkip, async (t) => {
  const disk = smallDisk(t);
  const f = homeOn(disk);
  const g = await startGate({ ...f, ...recordingUpstream('approvals', f.record) });
  try {
    for (const key of ['a1', 'a2', 'a3']) {
      assert.ok((await write(g, key)).ok, key);
      assert.equal(ran(f.record, key), 1);
    }
    disk.fill();
    for (let i = 0; i < 20; i++) {
      const key = `full${i}`;
      assert.equal(refusal(await write(g, key)), 'fail_closed', key);
      assert.equal(ran(f.record, key), 0, `${key} never reached the tool`);
    }
    // A read is recorded like a write: refused too.
    const read = await call(g, 'read_note', { text: 'x' });
    assert.equal(refusal(read), 'fail_closed');
    disk.free();
    for (const key of ['b1', 'b2', 'b3']) {
      assert.ok((await write(g, key)).ok, `${key}: recorded again once there is space`);
      assert.equal(ran(f.record, key), 1);
    }
  } finally {
    await g.close();
  }
  assertVerifies(f.home);
});

test('the disk fills while a write runs: the host gets its answer once; a retry replays that answer or is refused (reconcile_before_retry), never runs it again, before and after a restart; the chain verifies', smallDiskSkip, async (t) => {
  const disk = smallDisk(t);
  const f = homeOn(disk);
  // The tool takes 500 ms: the decision is durable and forwarded before the disk fills.
  const slow = recordingUpstream('approvals', f.record, { RECORDER_MODE: 'slow', RECORDER_DELAY_MS: '500' });
  let g = await startGate({ ...f, ...slow });
  let answer: Outcome | undefined;
  try {
    assert.ok((await write(g, 'before')).ok);
    const running = write(g, 'mid');
    for (const end = Date.now() + 20_000; ran(f.record, 'mid') === 0 && Date.now() < end; ) await new Promise((r) => setTimeout(r, 5));
    assert.equal(ran(f.record, 'mid'), 1, 'the write reached the tool');
    disk.fill();
    answer = await running;
    assert.ok(answer.ok, 'the tool ran: its answer reaches the host');
    assert.equal(refusal(await write(g, 'mid')), 'fail_closed', 'full: nothing can be decided');
    disk.free();
    settledOrUnknown(await write(g, 'mid'), answer);
    assert.ok((await write(g, 'after')).ok, 'other calls are recorded again');
  } finally {
    await g.close();
  }
  g = await startGate({ ...f, ...recordingUpstream('approvals', f.record) });
  try {
    settledOrUnknown(await write(g, 'mid'), answer!);
  } finally {
    await g.close();
  }
  assert.equal(ran(f.record, 'mid'), 1, 'the write ran once in all');
  const show = cloakpipe(['ops', 'show', 'mid', '--json', '--home', f.home]);
  assert.equal(show.status, 0, show.stderr);
  assert.ok(['unknown', 'succeeded'].includes(JSON.parse(show.stdout).state), 'never pending after a restart, never failed');
  assertVerifies(f.home);
});

test('a gate started on a full disk exits 2 naming the file system, not calling its database unreadable; with space again it starts and records', smallDiskSkip, async (t) => {
  const disk = smallDisk(t);
  const f = homeOn(disk);
  const options = { ...f, ...recordingUpstream('approvals', f.record) };
  let g = await startGate(options);
  try {
    assert.ok((await write(g, 'first')).ok);
  } finally {
    await g.close(); // SQLite removes the WAL and its index: a new start must make them again
  }
  disk.fill();
  const args = gateArgs(options).slice(1); // cloakpipe() adds the CLI itself
  const r = cloakpipe(args, { input: '', env: { ...process.env, ...options.env } });
  assert.equal(r.status, 2, r.stderr);
  assert.match(r.stderr, /cannot start: cannot read .*ledger\.db: the file system failed \(SQLITE_(FULL|IOERR)[A-Z_]*: a full disk or an I\/O error\), the database was not judged/);
  assert.doesNotMatch(r.stderr, /not a readable SQLite database/);
  disk.free();
  g = await startGate(options);
  try {
    assert.ok((await write(g, 'second')).ok);
    assert.equal(ran(f.record, 'second'), 1);
  } finally {
    await g.close();
  }
  assertVerifies(f.home);
});

/** `cloakpipe wrap --host FILE --home HOME`, as a user runs it. */
const wrap = (config: string, home: string) =>
  spawnSync(process.execPath, [CLI, 'wrap', '--host', config, '--home', home, '--timeout', '30s'], { encoding: 'utf8', timeout: 120_000 });

test('wrap with its home on a full disk: the config is left byte for byte, the refusal named (exit 1); with one page short of the drafts, no manifest is kept without its policy; with space, wrap drafts and wraps', smallDiskSkip, async (t) => {
  const config = join(tempDir('cloakpipe-wrap-full-'), 'servers.json');
  const text = `{\n  "mcpServers": {\n    "everything": { "command": ${JSON.stringify(process.execPath)}, "args": [${JSON.stringify(EVERYTHING)}, "stdio"] }\n  }\n}\n`;
  writeFileSync(config, text);

  // How large the drafts of this server are, from a wrap with room (then put back).
  const scratch = join(tempDir('cloakpipe-wrap-sizes-'), 'home');
  assert.equal(cloakpipe(['init', '--home', scratch]).status, 0);
  let r = wrap(config, scratch);
  assert.equal(r.status, 0, r.stderr);
  const pages = (name: string) => Math.ceil(statSync(join(scratch, 'servers', 'everything', name)).size / 4096);
  const manifestPages = pages('manifest.yaml');
  assert.equal(pages('policy.cedar'), 1, 'the drafted policy fits one page');
  assert.equal(spawnSync(process.execPath, [CLI, 'unwrap', '--host', config, '--home', scratch], { encoding: 'utf8' }).status, 0);
  assert.equal(readFileSync(config, 'utf8'), text);

  const disk = smallDisk(t);
  const home = join(disk.dir, 'home');
  assert.equal(cloakpipe(['init', '--home', home]).status, 0);
  const manifest = join(home, 'servers', 'everything', 'manifest.yaml');
  const policy = join(home, 'servers', 'everything', 'policy.cedar');

  // No room at all.
  disk.fill();
  r = wrap(config, home);
  assert.equal(r.status, 1, r.stderr);
  assert.match(r.stderr, new RegExp(`${config.replace(/[.]/g, '\\.')}: left as is: ENOSPC: no space left on device`));
  assert.equal(readFileSync(config, 'utf8'), text, 'the config byte for byte');
  assert.ok(!existsSync(manifest), 'no manifest kept');
  const backups = join(home, 'backups');
  assert.deepEqual(existsSync(backups) ? readdirSync(backups) : [], [], 'no backup, not even an empty one, of a config left as is');

  // Room for the manifest alone, not for the manifest and its policy: a wrap that wrote the
  // manifest first would keep it, policy-less, on every wrap after.
  disk.free();
  const reserve = join(disk.dir, 'reserve');
  writeFileSync(reserve, Buffer.alloc(manifestPages * 4096, 0x62));
  disk.fill();
  rmSync(reserve);
  r = wrap(config, home);
  assert.equal(r.status, 1, r.stderr);
  assert.match(r.stderr, /left as is: ENOSPC/);
  assert.equal(readFileSync(config, 'utf8'), text);
  assert.ok(!existsSync(manifest) || existsSync(policy), 'a manifest is never kept without its policy');

  disk.free();
  r = wrap(config, home);
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stderr, /"everything": drafted \d+ tools/);
  assert.ok(existsSync(manifest) && existsSync(policy));
  assert.notEqual(readFileSync(config, 'utf8'), text, 'wrapped');
});

test('init on a full disk, with no room or room for only part of a home: exit 2 named, none of its files left, so init runs again once there is space; that home serves calls', smallDiskSkip, async (t) => {
  const disk = smallDisk(t);
  // 0: not even the key; 1: the key, not its public half; 2 and more: the key pair, part of the databases.
  let failed = 0;
  for (const pages of [0, 1, 2, 4, 8, 16, 32]) {
    const home = join(disk.dir, `home-${pages}`);
    const reserve = join(disk.dir, 'reserve');
    if (pages > 0) writeFileSync(reserve, Buffer.alloc(pages * 4096, 0x63));
    disk.fill();
    if (pages > 0) rmSync(reserve);
    const r = cloakpipe(['init', '--home', home]);
    disk.free();
    if (r.status === 0) continue; // room enough after all: nothing to undo
    failed++;
    assert.equal(r.status, 2, r.stderr);
    assert.match(r.stderr, new RegExp(`^cloakpipe init: could not create the home ${home.replace(/[.]/g, '\\.')}\\b.*the files this init had made are removed\\n$`), `${pages} pages`);
    assert.deepEqual(existsSync(home) ? readdirSync(home, { recursive: true }).filter((f) => !statSync(join(home, String(f))).isDirectory()) : [], [], `${pages} pages: no file left`);
    const again = cloakpipe(['init', '--home', home]);
    assert.equal(again.status, 0, `${pages} pages, init again with space: ${again.stderr}`);
  }
  assert.ok(failed >= 3, `init failed with ${failed} of the room sizes: a home takes more than 2 pages`);
  const home = join(disk.dir, 'home-1');
  const f = fixtureFiles('cloakpipe-init-full-', { manifest: MANIFEST, context: CONTEXT, home });
  const g = await startGate({ ...f, ...recordingUpstream('approvals', f.record) });
  try {
    assert.ok((await write(g, 'k')).ok);
  } finally {
    await g.close();
  }
  assertVerifies(home);
});

test('manifest draft --out onto a full disk: the previous draft stays byte for byte, never part of a new one, no temporary file left; a device (--policy-out /dev/null) is written, not replaced', smallDiskSkip, (t) => {
  const disk = smallDisk(t);
  const out = join(disk.dir, 'manifest.yaml');
  const policy = join(disk.dir, 'manifest.cedar');
  const draft = (...args: string[]) => cloakpipe(['manifest', 'draft', ...args, '--timeout', '30s', '--', process.execPath, EVERYTHING, 'stdio'], { timeout: 60_000 });
  let r = draft('--out', out);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(statSync(out).mode & 0o777, 0o644 & ~process.umask(0o022) & 0o777);
  // Edited since, as a reviewer does: what a failed draft must not take away.
  const mine = { [out]: readFileSync(out, 'utf8') + '# reviewed\n', [policy]: readFileSync(policy, 'utf8') + '// reviewed\n' };
  for (const [p, text] of Object.entries(mine)) writeFileSync(p, text);
  disk.fill();
  r = draft('--out', out);
  assert.notEqual(r.status, 0, 'a draft that could not be written is an error');
  assert.match(r.stderr, /ENOSPC/);
  for (const [p, text] of Object.entries(mine)) assert.equal(readFileSync(p, 'utf8'), text, `${p}: byte for byte`);
  assert.deepEqual(readdirSync(disk.dir).filter((f) => f.endsWith('.tmp')), [], 'no temporary file left');
  disk.free();
  // A device is written as it is, never replaced by a file renamed over it (as root, that would
  // be the machine's /dev/null).
  r = draft('--out', out, '--policy-out', '/dev/null');
  assert.equal(r.status, 0, r.stderr);
  assert.ok(statSync('/dev/null').isCharacterDevice(), '/dev/null is still the device');
  assert.match(readFileSync(out, 'utf8'), /^version: 1\n/m);
});
