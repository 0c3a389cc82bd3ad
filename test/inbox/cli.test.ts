// `cloakpipe inbox serve` refuses, before it listens, what would weaken who may approve: a
// non-loopback address without a login token file, a token file others can read or too short,
// a receipt TTL past 24h, a missing or wrong approver key.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cloakpipe, makeHome, tempDir } from '../helpers/cli.js';
import { keygen } from '../helpers/recording-gate.js';
import { parseListen } from '../../src/cli/inbox.js';
import { startInbox } from '../helpers/inbox-server.js';

const dir = tempDir('cloakpipe-inbox-cli-');
keygen(join(dir, 'approver'));
const KEY = join(dir, 'approver.key');
const home = makeHome();
const serve = (...args: string[]) => cloakpipe(['inbox', 'serve', '--home', home, ...args], { timeout: 10_000 });

test('usage errors are exit 2 with the reason, and nothing listens', () => {
  const token = join(dir, 'token');
  writeFileSync(token, 'a-long-enough-login-token-0123\n', { mode: 0o644 });
  chmodSync(token, 0o644);
  const short = join(dir, 'short');
  writeFileSync(short, 'short\n', { mode: 0o600 });
  const cases: [string[], RegExp][] = [
    [[], /missing required --approver-key/],
    [['--approver-key', join(dir, 'approver.pub')], /approver key .*approver\.pub/],
    [['--approver-key', KEY, '--listen', '0.0.0.0:0'], /not a loopback address: give --auth-token-file/],
    [['--approver-key', KEY, '--listen', '[::]:0'], /not a loopback address: give --auth-token-file/],
    [['--approver-key', KEY, '--listen', '192.0.2.7:0'], /not a loopback address: give --auth-token-file/],
    [['--approver-key', KEY, '--listen', 'inbox.example:0'], /not a loopback address: give --auth-token-file/],
    [['--approver-key', KEY, '--auth-token-file', token], /readable by others/],
    [['--approver-key', KEY, '--auth-token-file', short], /16 to 512 printable characters/],
    [['--approver-key', KEY, '--ttl', '25h'], /at most 24h/],
    [['--approver-key', KEY, '--listen', 'nowhere'], /HOST:PORT/],
  ];
  for (const [args, why] of cases) {
    const r = serve(...args);
    assert.equal(r.status, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, why, args.join(' '));
    assert.doesNotMatch(r.stderr, /a-long-enough-login-token/, 'the token is never echoed');
  }
  assert.equal(cloakpipe(['inbox', 'serve', '--help']).status, 0);
});

test('--listen takes HOST:PORT and [IPv6]:PORT', () => {
  assert.deepEqual(parseListen('127.0.0.1:8932'), { host: '127.0.0.1', port: 8932 });
  assert.deepEqual(parseListen('[::1]:0'), { host: '::1', port: 0 });
  assert.deepEqual(parseListen('localhost:80'), { host: 'localhost', port: 80 });
  for (const bad of ['127.0.0.1', ':80', '::1:80', '127.0.0.1:99999', '[::1]']) assert.throws(() => parseListen(bad), bad);
});

test('beyond loopback (with a token file) the page works under the name it is reached by; another origin is still refused', async () => {
  const inbox = await startInbox({ home, approverKey: KEY, listen: '0.0.0.0:0' });
  try {
    const origin = inbox.url; // http://127.0.0.1:PORT, not the listen address 0.0.0.0
    const login = await fetch(`${inbox.url}/login`, { method: 'POST', headers: { origin }, body: new URLSearchParams({ token: inbox.token }), redirect: 'manual' });
    assert.equal(login.status, 200, 'a same-origin login');
    const cookie = login.headers.get('set-cookie')!.split(';')[0];
    const { csrf } = (await login.json()) as { csrf: string };
    const evil = await fetch(`${inbox.url}/login`, { method: 'POST', headers: { origin: 'http://evil.example' }, body: new URLSearchParams({ token: inbox.token }), redirect: 'manual' });
    assert.equal(evil.status, 403);
    const list = await fetch(`${inbox.url}/api/requests`, { headers: { cookie, 'x-csrf-token': csrf } });
    assert.equal(list.status, 200);
    // Another Host name is served here (no loopback to rebind to), but only with the session.
    assert.equal((await fetch(`${inbox.url}/api/requests`)).status, 401);
    assert.match(inbox.stderr(), /beyond loopback in clear: .*--tls-cert/, 'it says the token crosses the network in clear');
  } finally {
    await inbox.stop();
  }
});
