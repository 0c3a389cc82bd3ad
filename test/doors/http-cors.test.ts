// What --allowed-origin accepts: an origin exactly as a browser sends it in `Origin`.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isOrigin } from '../../src/doors/http-cors.js';

test('an allowed origin is spelled as a browser sends it; any other spelling is refused', () => {
  for (const o of ['http://localhost:6274', 'https://app.example.com', 'http://127.0.0.1:8080', 'http://[::1]:3000', 'https://xn--bcher-kva.example']) assert.ok(isOrigin(o), o);
  const never = [
    '*',
    'null',
    '',
    'localhost:6274',
    'http://localhost:6274/',
    'http://localhost:6274/app',
    'http://localhost:6274?x',
    'HTTP://localhost:6274',
    'http://LOCALHOST:6274',
    'http://localhost:80',
    'https://app.example.com:443',
    'https://bücher.example',
    'http://user@localhost:6274',
    'file:///tmp/x',
    'chrome-extension://abcdefghijklmnop',
    ' http://localhost:6274',
  ];
  for (const o of never) assert.ok(!isOrigin(o), o);
});
