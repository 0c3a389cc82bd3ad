// The upstream header parser (flag and file) against generated input: whatever it accepts Node's
// own HTTP header validators accept too (differential), holds no byte that could split a header
// line, and no refusal ever shows the value it refused.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { validateHeaderName, validateHeaderValue } from 'node:http';
import { chmodSync, chownSync, mkdirSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { headerFileText, parseHeaderFile, parseHeaderLine, readHeaderFile, UpstreamHeaderError } from '../../src/doors/upstream/headers.js';
import { tempDir } from '../helpers/cli.js';

const SECRET = 'CANARY-hdr-value-93af';
const refusal = (f: () => unknown): string => {
  try {
    f();
  } catch (e) {
    assert.ok(e instanceof UpstreamHeaderError, String(e));
    return e.message;
  }
  return assert.fail('accepted');
};

let seed = 0x9e3779b9;
const rnd = (n: number) => ((seed = (Math.imul(seed ^ (seed >>> 15), 0x2c1b3c6d) + 0x6d2b79f5) >>> 0) % n);
const ALPHABET = ['a', 'Z', '0', '-', '_', ':', ' ', '\t', '\r', '\n', '\0', '\x7f', '\x01', 'é', '\u2028', '"', '(', '#', SECRET];

test('generated header lines: whatever is accepted passes Node\'s validators and has no control byte; refusals never show the value', () => {
  let accepted = 0;
  for (let i = 0; i < 20_000; i++) {
    let line = '';
    for (let k = rnd(12); k >= 0; k--) line += ALPHABET[rnd(ALPHABET.length)];
    if (rnd(2)) line = `X-Key: ${line}`;
    let got: [string, string];
    try {
      got = parseHeaderLine(line);
    } catch (e) {
      assert.ok(e instanceof UpstreamHeaderError);
      // The name is shown (it is not a credential); nothing after the colon is.
      const colon = line.indexOf(':');
      if (colon >= 0 && !line.slice(0, colon).includes(SECRET)) assert.ok(!e.message.includes(SECRET), e.message);
      continue;
    }
    accepted++;
    const [name, value] = got;
    assert.doesNotThrow(() => validateHeaderName(name));
    assert.doesNotThrow(() => validateHeaderValue(name, value));
    assert.match(value, /^[\t\x20-\x7e]+$/);
    assert.equal(value, value.trim());
  }
  assert.ok(accepted > 1000, `accepted ${accepted}`);
});

test('header file: comments, blank lines and CRLF ends are fine; every bad line refuses the file by its number, never its value', () => {
  assert.deepEqual(parseHeaderFile(Buffer.from(`# creds\r\nAuthorization: Bearer ${SECRET}\r\n\r\nX-Tenant:  acme \n`)), [
    ['Authorization', `Bearer ${SECRET}`],
    ['X-Tenant', 'acme'],
  ]);
  const bad: [string | Buffer, RegExp][] = [
    [`X-Key: a\rInjected: ${SECRET}\n`, /line 1: holds a CR inside the line/],
    [`X-Ok: 1\nX-Key: a\0${SECRET}\n`, /line 2: X-Key: the value holds a line break, NUL/],
    [`Host: ${SECRET}\n`, /line 1: Host: the gate sets this header itself/],
    [`Content-Length: 5\n`, /the gate sets this header itself/],
    [`mcp-session-id: ${SECRET}\n`, /the gate sets this header itself/],
    [`Transfer-Encoding: chunked\n`, /the gate sets this header itself/],
    [`${SECRET}\n`, /line 1 must be "Name: value"/],
    [`Bad Name: ${SECRET}\n`, /must be "Name: value"/],
    [`X-Key:\n`, /the value is empty/],
    [`X-A: ${SECRET}\nx-a: ${SECRET}\n`, /x-a is given twice/],
    [`X-Key: caf\u00e9 ${SECRET}\n`, /not visible ASCII/],
    [Buffer.from([0x58, 0x3a, 0x20, 0xff, 0x0a]), /not UTF-8/],
    ['# only a comment\n\n', /holds no header/],
  ];
  for (const [text, msg] of bad) {
    const m = refusal(() => parseHeaderFile(typeof text === 'string' ? Buffer.from(text) : text));
    assert.match(m, msg);
    assert.ok(!m.includes(SECRET), m);
  }
});

test('header file on disk: 0600 and yours, or refused (others can read it, a FIFO, a folder, too large, another owner)', () => {
  const dir = tempDir();
  const good = join(dir, 'good');
  writeFileSync(good, headerFileText([['Authorization', `Bearer ${SECRET}`]]), { mode: 0o600 });
  assert.deepEqual(readHeaderFile(good), [['Authorization', `Bearer ${SECRET}`]]);
  for (const mode of [0o644, 0o640, 0o604, 0o620]) {
    chmodSync(good, mode);
    const m = refusal(() => readHeaderFile(good));
    assert.match(m, /others may read or write it \(mode 06\d\d; it holds credentials: chmod 600 it\)/);
    assert.ok(!m.includes(SECRET));
  }
  chmodSync(good, 0o600);
  const folder = join(dir, 'folder');
  mkdirSync(folder, { mode: 0o700 });
  assert.match(refusal(() => readHeaderFile(folder)), /not a regular file/);
  const fifo = join(dir, 'fifo');
  assert.equal(spawnSync('mkfifo', ['-m', '600', fifo]).status, 0);
  assert.match(refusal(() => readHeaderFile(fifo)), /not a regular file/); // and does not block on it
  const big = join(dir, 'big');
  writeFileSync(big, `X-Pad: ${'a'.repeat(70_000)}\n`, { mode: 0o600 });
  assert.match(refusal(() => readHeaderFile(big)), /larger than 65536 bytes/);
  assert.match(refusal(() => readHeaderFile(join(dir, 'missing'))), /cannot open it \(ENOENT\)/);
  if (process.getuid?.() === 0) {
    const theirs = join(dir, 'theirs');
    writeFileSync(theirs, 'X-A: b\n', { mode: 0o600 });
    chownSync(theirs, 65534, 65534);
    assert.match(refusal(() => readHeaderFile(theirs)), /owned by another user \(uid 65534\)/);
  }
});
