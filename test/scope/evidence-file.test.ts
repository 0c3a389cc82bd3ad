// `scope report --evidence` through the binary: the evidence is read as a regular file, opened
// without waiting and to a bound, so a FIFO or a device in its place is named, never waited on.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cloakpipe, tempDir } from '../helpers/cli.js';

test('--evidence naming a FIFO with no writer or a link to /dev/zero: exit 2, not a regular file, never a wait', () => {
  const dir = tempDir('cp-scope-evidence-file-');
  const manifest = join(dir, 'm.json');
  writeFileSync(
    manifest,
    JSON.stringify({
      version: 1,
      release: 'r@1',
      tools: { create_order: { effect: 'write', arguments: {} } },
      effects: { order_create: { description: 'an order is committed', paths: [{ id: 'gateway', kind: 'agent', route: { via: 'gate', tool: 'create_order' }, mediator: { type: 'gate' } }] } },
    }),
  );
  const fifo = join(dir, 'evidence.fifo');
  execFileSync('mkfifo', [fifo]); // opened by name to read, it waited for a writer that never came
  const zero = join(dir, 'zero.json');
  symlinkSync('/dev/zero', zero); // read to its end, it never ends
  for (const path of [fifo, zero]) {
    const r = cloakpipe(['scope', 'report', '--manifest', manifest, '--evidence', path], { timeout: 60_000 });
    assert.equal(r.error, undefined, `${path}: the command returned`);
    assert.equal(r.status, 2, `${path}: ${r.stderr}`);
    assert.match(r.stderr, /cannot read evidence file .*: not a regular file/);
  }
});
