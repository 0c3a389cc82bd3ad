// The control socket: mode 0600, one reply per line, and the confine-control client's exit codes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, statSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ControlServer, sendControl } from '../../src/confine/control.js';
import { Restrictions } from '../../src/confine/restrictions.js';
import { run as controlCli } from '../../src/cli/confine-control.js';

test('the control socket is created 0600 and answers updates', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'cp-control-'));
  const path = join(dir, 'control.sock');
  const r = new Restrictions(['send_update', 'post_public']);
  const server = new ControlServer(path, async (l) => r.apply(l));
  await server.listen();
  try {
    assert.equal(statSync(path).mode & 0o777, 0o600);
    assert.ok(statSync(path).isSocket());
    assert.deepEqual(await sendControl(path, 1, ['send_update']), { ok: true, revision: 1 });
    assert.deepEqual(await sendControl(path, 1, ['send_update']), { ok: false, closed: true });
    assert.equal(r.closed, true);
    assert.equal(await controlCli(['--control', path, '--revision', '2', '--tools', 'send_update,post_public']), 0);
    assert.equal(await controlCli(['--control', path, '--revision', '3', '--tools', 'not_approved']), 1);
    assert.equal(await controlCli(['--control', path, '--revision', '4', '--tools', '']), 0);
    assert.equal(r.permits('send_update'), false);
  } finally {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('an existing path is never replaced', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'cp-control-'));
  const path = join(dir, 'control.sock');
  writeFileSync(path, 'x');
  await assert.rejects(new ControlServer(path, async () => ({ ok: false, closed: true })).listen());
  rmSync(dir, { recursive: true, force: true });
});

test('confine-control usage errors', async () => {
  await assert.rejects(controlCli(['--revision', '1', '--tools', 'a']));
  await assert.rejects(controlCli(['--control', '/nonexistent', '--revision', 'x', '--tools', 'a']));
});
