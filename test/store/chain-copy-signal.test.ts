// The read commands over a fleet's shared store (verify, export, prove, show --store) read a
// gate's chain through a temporary SQLite copy (chain-copy.ts). A signal while the copy is made
// or read removes it and the command ends by that signal, promptly: a whole chain's copy was
// left in the temporary folder for good. The real binary, a real PostgreSQL, a real signed chain.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readdirSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { CLI, tempDir } from '../helpers/cli.js';
import { pgSkip } from './postgres/pg.js';
import { bigChain } from '../helpers/fleet.js';


test('a signal during verify, export or show --store removes the chain copy; the command ends by that signal', { ...pgSkip, timeout: 600_000 }, async () => {
  const { url } = await bigChain(40_000);
  const commands = [
    ['verify', '--store', url, '--gate', 'gate-big', '--workers', '0'],
    ['ledger', 'export', '--store', url, '--gate', 'gate-big', '--out', '/dev/null'],
    ['ledger', 'show', '--store', url, '--gate', 'gate-big', '--json'],
  ];
  for (const args of commands) {
    for (const signal of ['SIGTERM', 'SIGINT'] as const) {
      let caught = false;
      // A probe that comes too late (the command finished first, on a busy machine) tries again.
      for (let attempt = 0; attempt < 5 && !caught; attempt++) {
        const tmp = tempDir('cp-chain-tmp-');
        const child = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, TMPDIR: tmp } });
        let stderr = '';
        child.stderr.setEncoding('utf8').on('data', (d) => (stderr += d));
        const closed = once(child, 'close');
        const copies = () => readdirSync(tmp).filter((d) => d.startsWith('cloakpipe-chain-'));
        while (copies().length === 0 && child.exitCode === null) await sleep(1);
        caught = copies().length === 1 && child.exitCode === null;
        if (caught) child.kill(signal);
        const [code, ended] = (await closed) as [number | null, string | null];
        if (!caught) continue;
        const what = `${args.slice(0, 2).join(' ')} ${signal}`;
        assert.deepEqual([code, ended], [null, signal], `${what}: ${stderr}`);
        assert.deepEqual(copies(), [], `${what}: no chain copy left`);
      }
      assert.ok(caught, `${args.slice(0, 2).join(' ')} ${signal}: the command was never caught while it held its copy`);
    }
  }
});
