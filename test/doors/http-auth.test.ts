// Static bearer tokens and the Origin allow-list of the HTTP door.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readTokenFile, originAllowed, isLoopback, TokenFileError } from '../../src/doors/http-auth.js';
import { tokenFile } from '../helpers/cli.js';

const A = 'alice-token-0123456789';
const B = 'bob-token-abcdefghijkl';

test('a token names its agent; a prefix, an extension, another scheme or no token names none', () => {
  const t = readTokenFile(tokenFile(`# comment\n\n${A} alice\n${B}   bob\n`));
  assert.deepEqual(t.check(`Bearer ${A}`), { agent: 'alice' });
  assert.deepEqual(t.check(`bearer ${B}`), { agent: 'bob' });
  for (const bad of [`Bearer ${A.slice(0, -1)}`, `Bearer ${A}x`, `Basic ${A}`, `Bearer  ${A}`, `Bearer ${A} alice`, undefined, '']) assert.equal(t.check(bad), null, String(bad));
});

test('a malformed token file is refused naming the line, never the token', () => {
  for (const [text, re] of [[`${A}\n`, /line 1: expected/], [`${A} a\nshort b\n`, /line 2: a token must be at least 16/], ['# none\n', /no tokens/]] as const) {
    const f = tokenFile(text);
    assert.throws(() => readTokenFile(f), (e: unknown) => e instanceof TokenFileError && re.test(e.message) && !e.message.includes(A) && !e.message.includes('short'));
  }
});

test('origins: absent passes, listed passes exactly, anything else does not; loopback hosts', () => {
  assert.ok(originAllowed(undefined, []));
  assert.ok(originAllowed('http://localhost:6274', ['http://localhost:6274']));
  for (const o of ['http://localhost:6275', 'http://localhost:6274/', 'null', 'http://evil.example']) assert.ok(!originAllowed(o, ['http://localhost:6274']), o);
  assert.deepEqual(['127.0.0.1', '::1', 'localhost', '0.0.0.0', '10.0.0.1', '127.0.0.1.example'].map(isLoopback), [true, true, true, false, false, false]);
});
