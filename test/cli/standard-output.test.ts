// A command whose standard output fails under it (src/cli/standard-output.ts), through the real
// binary. A reader that stops early (`| head`) ends the command without a word, exit 141 as
// SIGPIPE would end it (it printed Node's stack trace, exit 1); a full disk (`> /dev/full`) is
// said on stderr, exit 2 (a stack trace, exit 1). Never exit 0 for output that did not arrive.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { closeSync, openSync } from 'node:fs';
import { join } from 'node:path';
import { CLI, makeHome, tempDir } from '../helpers/cli.js';
import { session } from '../ledger/session.js';

let made: string | null = null;
/** A home whose ledger prints far more than a socket's buffers hold (~400 KiB). */
async function bigHome(): Promise<string> {
  if (made) return made;
  const h = makeHome();
  await session(h, 1000);
  return (made = h);
}

const LARGE = [
  ['ledger', 'show', '--json'],
  ['ledger', 'export', '--out', '/dev/stdout'],
];

/** Runs `args`, reads the first chunk of its stdout, then closes the pipe as `head` does. */
async function readFirstChunk(args: string[]): Promise<{ code: number | null; signal: string | null; stderr: string; read: number }> {
  const child = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (d) => (stderr += d));
  let read = 0;
  child.stdout.once('data', (d: Buffer) => {
    read = d.length;
    child.stdout.destroy();
  });
  const [code, signal] = (await once(child, 'close')) as [number | null, string | null];
  return { code, signal, stderr, read };
}

test('a reader that stops after its first chunk (| head): ledger show --json and ledger export --out /dev/stdout end without a word, exit 141', async () => {
  const h = await bigHome();
  for (const args of LARGE) {
    const whole = spawnSync(process.execPath, [CLI, ...args, '--home', h], { stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 1 << 28 });
    assert.equal(whole.status, 0, whole.stderr.toString());
    assert.ok(whole.stdout.length > 1 << 20, `${args.join(' ')} prints ${whole.stdout.length} bytes: more than buffers hold`);
    const r = await readFirstChunk([...args, '--home', h]);
    assert.ok(r.read > 0 && r.read < whole.stdout.length);
    assert.deepEqual([r.code, r.signal, r.stderr], [141, null, ''], args.join(' '));
  }
});

test('standard output on a full disk (> /dev/full): exit 2 and the failure said on stderr, for printed lines and for --out /dev/stdout', async () => {
  const h = await bigHome();
  const small = makeHome(); // an export written in one batch: its failure is known only after
  await session(small);
  const full = openSync('/dev/full', 'w');
  try {
    for (const [args, what] of [
      [['ledger', 'show', '--home', h], 'standard output'],
      [['ledger', 'show', '--json', '--home', h], 'standard output'],
      [['ledger', 'export', '--home', h, '--out', '/dev/stdout'], '--out /dev/stdout'],
      [['ledger', 'export', '--home', small, '--out', '/dev/stdout'], '--out /dev/stdout'],
      [['ledger', 'checkpoint', '--home', h, '--out', '/dev/stdout'], '--out /dev/stdout'],
    ] as const) {
      const r = spawnSync(process.execPath, [CLI, ...args], { stdio: ['ignore', full, 'pipe'], encoding: 'utf8', timeout: 120_000 });
      assert.equal(r.status, 2, `${args.join(' ')}: ${r.stderr}`);
      assert.equal(r.stderr, `cloakpipe: cannot write ${what}: ENOSPC: no space left on device, write\n`, args.join(' '));
    }
  } finally {
    closeSync(full);
  }
});

test('in a real shell pipe into head, as cat in the same pipe: exit 141 under pipefail and not a word, for ledger show --json and ledger export --out /dev/stdout', async () => {
  const h = await bigHome();
  const dir = tempDir();
  for (const args of LARGE) {
    const file = join(dir, 'whole.out');
    const into = openSync(file, 'w');
    const whole = spawnSync(process.execPath, [CLI, ...args, '--home', h], { stdio: ['ignore', into, 'pipe'] });
    closeSync(into);
    assert.equal(whole.status, 0, whole.stderr.toString());
    const quoted = (a: string[]) => a.map((x) => `'${x}'`).join(' ');
    const ours = `${quoted([process.execPath, CLI, ...args, '--home', h])} | head -c 100 >/dev/null`;
    const peer = `cat '${file}' | head -c 100 >/dev/null`;
    for (const pipeline of [peer, ours]) {
      const r = spawnSync('bash', ['-c', `set -o pipefail; ${pipeline}; echo "\${PIPESTATUS[0]}"`], { encoding: 'utf8', timeout: 120_000 });
      assert.deepEqual([r.stdout, r.stderr], ['141\n', ''], pipeline);
    }
  }
});
