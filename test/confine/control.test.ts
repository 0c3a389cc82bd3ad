// The control socket: mode 0600, one reply per line, the confine-control client's exit codes,
// and what an invalid or stale update does to the calls after it (through the real binary).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { mkdtempSync, statSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ControlServer, sendControl } from '../../src/confine/control.js';
import { Restrictions } from '../../src/confine/restrictions.js';
import { BridgeCore } from '../../src/confine/core.js';
import { run as controlCli } from '../../src/cli/confine-control.js';
import { cloakpipe, cloakpipeAsync } from '../helpers/cli.js';
import { ALIASES, freshConfineGate, throughGate } from './fixtures/session.js';

const socketPath = () => join(mkdtempSync(join(tmpdir(), 'cp-control-')), 'control.sock');

/** One raw connection: write `bytes`, end our side, collect everything the server answers. */
function rawExchange(path: string, bytes: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = net.createConnection(path);
    let got = '';
    s.setEncoding('utf8');
    s.on('connect', () => s.end(bytes));
    s.on('data', (d: string) => (got += d));
    s.on('close', () => resolve(got));
    s.on('error', reject);
  });
}

test('the control socket is created 0600 and answers updates', async () => {
  const path = socketPath();
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
    assert.equal(r.admits('send_update').state, 'revoked');
  } finally {
    await server.close();
  }
});

test('confine-control (the binary): a stale or invalid revision is refused AND closes admission; calls stay refused until a valid newer one', async (t) => {
  const { gate, home } = await freshConfineGate();
  const out: any[] = [];
  const forwarded: string[] = [];
  const core = new BridgeCore({
    aliases: ALIASES,
    gate,
    call: throughGate(gate, async (_tool, args) => {
      forwarded.push(String(args.message));
      return { result: { content: [{ type: 'text', text: 'ok' }] } };
    }),
    maxCalls: 64,
    writeToAgent: (l) => out.push(JSON.parse(l)),
    onStop: (r) => assert.fail(`the session stopped: ${r}`),
  });
  const path = socketPath();
  const server = new ControlServer(path, (l) => core.control(l));
  await server.listen();
  t.after(() => server.close());
  let n = 0;
  const call = async () => {
    core.pushStdout(Buffer.from(JSON.stringify({ operation: 'notify', arguments: { message: `m${n++}` } }) + '\n'));
    await core.idle();
    return out.at(-1);
  };
  const closed = { allowed: false, result: { reason: 'admission_closed' } };
  const control = async (revision: string, tools: string, expected: number) => {
    const r = await cloakpipeAsync(['confine-control', '--control', path, `--revision=${revision}`, '--tools', tools]);
    assert.equal(r.status, expected, `--revision ${revision} --tools ${tools}: ${r.stdout}${r.stderr}`);
  };

  // The session starts at revision 0: 0 is stale. Before the fix the client refused it itself
  // (a usage error) and the session never heard of it: the next call went through.
  await control('0', 'send_update', 1);
  assert.deepEqual(await call(), closed);
  assert.deepEqual(await call(), closed);
  await control('1', 'send_update', 0);
  assert.equal((await call()).allowed, true);
  // Stale: not above the revision in force.
  await control('1', 'send_update', 1);
  assert.deepEqual(await call(), closed);
  // Invalid: not an integer, negative, a tool not approved at start, an empty tool name.
  for (const [rev, tools] of [['x', 'send_update'], ['-3', 'send_update'], ['2', 'delete_everything'], ['2', 'send_update,,post_public']]) {
    await control(rev, tools, 1);
    assert.deepEqual(await call(), closed, `after --revision ${rev} --tools ${tools}`);
  }
  await control('2', 'send_update', 0);
  assert.equal((await call()).allowed, true);
  assert.deepEqual(forwarded, ['m2', 'm8'], 'only the calls made while admission was open reached the upstream');

  await server.close();
  await gate.close('test');
  assert.equal(cloakpipe(['verify', '--home', home]).status, 0);
  const entries = cloakpipe(['ledger', 'show', '--json', '--home', home]).stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l));
  const decisions = entries.filter((e) => e.kind === 'decision');
  assert.deepEqual(
    decisions.map((e) => e.reason ?? e.outcome),
    ['admission_closed', 'admission_closed', 'allow', 'admission_closed', 'admission_closed', 'admission_closed', 'admission_closed', 'admission_closed', 'allow'],
  );
});

test('an update cut off before its newline closes admission; a client that half-closes still gets its reply', async () => {
  const path = socketPath();
  const r = new Restrictions(['send_update']);
  const server = new ControlServer(path, async (l) => r.apply(l));
  await server.listen();
  try {
    assert.equal(await rawExchange(path, '{"revision": 1, "tools": ["send_update"]}\n'), '{"ok":true,"revision":1}\n');
    assert.equal(r.closed, false);
    assert.equal(await rawExchange(path, '{"revision": 2, "tools": ["send_update"]}'), '{"ok":false,"closed":true}\n');
    assert.equal(r.closed, true);
    assert.equal(r.admits('send_update').state, 'closed');
    assert.equal(await rawExchange(path, '{"revision": 2, "tools": ["send_update"]}\n'), '{"ok":true,"revision":2}\n');
    assert.equal(r.admits('send_update').state, 'open');
  } finally {
    await server.close();
  }
});

test('an existing path is never replaced', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'cp-control-'));
  const path = join(dir, 'control.sock');
  writeFileSync(path, 'x');
  await assert.rejects(new ControlServer(path, async () => ({ ok: false, closed: true })).listen());
  rmSync(dir, { recursive: true, force: true });
});

test('confine-control usage errors: a missing flag, or no session at the socket', async () => {
  await assert.rejects(controlCli(['--revision', '1', '--tools', 'a']));
  await assert.rejects(controlCli(['--control', '/nonexistent', '--tools', 'a']));
  await assert.rejects(controlCli(['--control', '/nonexistent', '--revision', '1']));
  await assert.rejects(controlCli(['--control', '/nonexistent', '--revision', 'x', '--tools', 'a']));
});
