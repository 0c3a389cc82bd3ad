// An init killed between writing the home's files and the end of its schema left a home every
// command refused ("does not hold the gate's schema ... restore it from a backup") and every init
// refused as an existing home ("gate.key exists; refusing to overwrite a gate key"), with nothing
// to say what to do. Now init run again completes it; a home that holds its schema or an entry is
// refused as before. The real binary, SIGKILLed at random instants of its run.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CLI, cloakpipe, makeHome, tempDir } from '../helpers/cli.js';

/** The home can be used: its operations and its (empty) ledger are read. */
function usable(home: string): string | null {
  for (const argv of [['ops', 'list', '--home', home], ['verify', '--home', home, '--allow-empty']]) {
    const r = cloakpipe(argv);
    if (r.status !== 0) return `${argv[0]}: ${r.stderr.trim()}`;
  }
  return null;
}

test('init again on a home whose init stopped after its files and before its schema completes it', () => {
  const home = makeHome();
  // As a kill right after the files were made leaves it: an empty operations.db, no schema.
  rmSync(join(home, 'operations.db'));
  writeFileSync(join(home, 'operations.db'), '', { mode: 0o600 });
  assert.match(usable(home) ?? '', /does not hold the gate's schema/);
  const again = cloakpipe(['init', '--home', home]);
  assert.equal(again.status, 0, again.stderr);
  assert.equal(usable(home), null);
  const third = cloakpipe(['init', '--home', home]);
  assert.equal(third.status, 2, 'a finished home is not made again');
  assert.match(third.stderr, /gate\.key exists; refusing to overwrite a gate key/);
});

test('init SIGKILLed at random instants: run again, it leaves a usable home or says what to do', { timeout: 300_000 }, async () => {
  // How long an init takes here: kills fall anywhere in it.
  const t0 = process.hrtime.bigint();
  makeHome();
  const span = Number(process.hrtime.bigint() - t0) / 1e6;
  const seen = new Set<string>();
  for (let i = 0; i < 24; i++) {
    const home = join(tempDir(), 'home');
    const child = spawn(process.execPath, [CLI, 'init', '--home', home], { stdio: 'ignore' });
    const ended = new Promise((r) => child.once('exit', r));
    await new Promise((r) => setTimeout(r, Math.random() * span));
    child.kill('SIGKILL');
    await ended;
    seen.add(existsSync(home) ? readdirSync(home).sort().join(',') : '(none)');
    const again = cloakpipe(['init', '--home', home]);
    if (again.status !== 0 && /move the home away and run init again/.test(again.stderr)) continue; // said what to do
    assert.equal(usable(home), null, `after a kill (left: ${[...seen].at(-1)}), init said: ${again.stderr.trim()}`);
  }
});
