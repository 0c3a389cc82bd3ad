// The read commands on a home's SQLite store (ledger show, ledger export, verify, ops list,
// scope report), ended by Ctrl-C or SIGTERM while they read: each ends by that signal (as a
// program the signal ends: 130 or 143 in a shell), its home byte for byte as it was, no
// temporary file left beside an --out nor in the temporary folder. The real binary on a home
// of 20,000 entries signed by the production Ledger; signalled once the database is open.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, readlinkSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { CLI, cloakpipe, makeHome, tempDir } from '../helpers/cli.js';
import { fixture } from '../ledger/epoch-fixture.js';

/**
 * Every file of the home and its sha256, SQLite's scratch aside: its shared-memory index, and a
 * WAL without a frame, which a reader ended by a signal leaves (the next read removes both).
 */
function files(home: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of readdirSync(home)) {
    const p = join(home, name);
    const st = statSync(p);
    if (st.isFile() && !name.endsWith('-shm') && !(name.endsWith('-wal') && st.size === 0)) out[name] = createHash('sha256').update(readFileSync(p)).digest('hex');
  }
  return out;
}

/** `pid` holds `path` open. */
function holds(pid: number, path: string): boolean {
  try {
    return readdirSync(`/proc/${pid}/fd`).some((fd) => {
      try {
        return readlinkSync(`/proc/${pid}/fd/${fd}`) === path;
      } catch {
        return false;
      }
    });
  } catch {
    return false;
  }
}

test('a read command signalled while it reads ends by that signal and leaves the home as it was, nothing else behind', { timeout: 600_000 }, async () => {
  const home = makeHome();
  const f = fixture({ home });
  f.add(20_000);
  f.db.close();
  const scope = join(process.cwd(), 'examples', 'scope', 'order-service.yaml');
  assert.equal(cloakpipe(['verify', '--home', home]).status, 0, 'the home verifies');
  assert.equal(cloakpipe(['ops', 'list', '--home', home]).status, 0);
  const before = files(home);
  const outDir = tempDir('cp-read-signal-out-');
  const commands: Array<{ args: string[]; reads: string }> = [
    { args: ['ledger', 'show', '--home', home], reads: 'ledger.db' },
    { args: ['ledger', 'show', '--json', '--home', home], reads: 'ledger.db' },
    { args: ['ledger', 'export', '--home', home, '--out', join(outDir, 'export.jsonl')], reads: 'ledger.db' },
    { args: ['verify', '--home', home, '--workers', '0'], reads: 'ledger.db' },
    { args: ['verify', '--home', home], reads: 'ledger.db' },
    { args: ['scope', 'report', '--manifest', scope, '--home', home, '--json'], reads: 'ledger.db' },
    { args: ['ops', 'list', '--home', home], reads: 'operations.db' },
  ];
  for (const { args, reads } of commands) {
    for (const signal of ['SIGINT', 'SIGTERM'] as const) {
      const what = `${args.slice(0, 2).join(' ')} ${signal}`;
      let caught = false;
      // A probe that comes too late (the command finished first, on a busy machine) tries again.
      for (let attempt = 0; attempt < 5 && !caught; attempt++) {
        const tmp = tempDir('cp-read-signal-tmp-');
        const child = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, TMPDIR: tmp } });
        // Its output is not read: a command writing as it reads waits for its reader, mid-read.
        let stderr = '';
        child.stderr.setEncoding('utf8').on('data', (d) => (stderr += d));
        const closed = once(child, 'close');
        while (child.exitCode === null && !holds(child.pid!, join(home, reads))) await sleep(1);
        caught = child.exitCode === null;
        if (caught) child.kill(signal);
        child.stdout.resume();
        const [code, ended] = (await closed) as [number | null, string | null];
        if (!caught) continue;
        assert.deepEqual([code, ended], [null, signal], `${what}: ${stderr}`);
        assert.deepEqual(readdirSync(tmp), [], `${what}: nothing in the temporary folder`);
      }
      assert.ok(caught, `${what}: never caught while it read`);
      assert.deepEqual(readdirSync(outDir), [], `${what}: no export and no temporary file beside it`);
      assert.deepEqual(files(home), before, `${what}: the home as it was`);
    }
  }
});
