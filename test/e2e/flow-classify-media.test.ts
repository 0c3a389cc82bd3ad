// A text a server sends encoded is classified as its reader reads it: a base64 blob of any text
// media type (a mail, JSON Lines, TOML, a PEM file, a text type with parameters), in the charset
// its type names, a data: URL percent-encoded (RFC 2397 without ;base64) and a URL's query
// percent-encoded. Before, only text/*, a few application/ types and base64 data: URLs were
// decoded: these passed as their encoding, no rule matched, and the public sink stayed open. An image stays unread (control).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { call, summary } from '../helpers/gate.js';
import { afterMarked } from '../helpers/marking.js';

const TEXT_TYPES = [
  'message/rfc822',
  'application/jsonl',
  'application/x-ndjson',
  'application/toml',
  'application/x-pem-file',
  'application/pem-certificate-chain',
  'text/csv; charset=utf-8; header=present',
  'application/octet-stream; charset=utf-8',
];

for (const mimeType of TEXT_TYPES) {
  test(`an embedded ${mimeType} blob is classified decoded`, { timeout: 120_000 }, async () => {
    const r = await afterMarked(async (g) => assert.equal(summary(await call(g, 'blob', { mimeType })), 'ok'));
    assert.deepEqual(r.labels, [['confidential', 'classify']]);
    assert.equal(r.sink, 'sink_ceiling_exceeded');
  });
}

test('a resources/read answer of a message/rfc822 blob is classified decoded', { timeout: 120_000 }, async () => {
  const r = await afterMarked(async (g) => {
    const read = await g.client.readResource({ uri: 'media:message/rfc822' }, { timeout: 20_000 });
    assert.equal(typeof (read.contents[0] as { blob?: unknown }).blob, 'string');
  });
  assert.deepEqual(r.labels, [['confidential', 'classify']]);
  assert.equal(r.sink, 'sink_ceiling_exceeded');
});

test('a UTF-16 text blob is classified in the charset its type names', { timeout: 120_000 }, async () => {
  const r = await afterMarked(async (g) => assert.equal(summary(await call(g, 'blob', { mimeType: 'text/plain; charset=utf-16le', charset: 'utf-16le' })), 'ok'));
  assert.deepEqual(r.labels, [['confidential', 'classify']]);
  assert.equal(r.sink, 'sink_ceiling_exceeded');
});

test('a percent-encoded data: URL is classified decoded', { timeout: 120_000 }, async () => {
  const r = await afterMarked(async (g) => {
    const out = await call(g, 'link', {});
    assert.ok(out.ok && JSON.stringify(out.result).includes('data:text/plain,%6E%61'), 'the host got the data: URL');
  });
  assert.deepEqual(r.labels, [['confidential', 'classify']]);
  assert.equal(r.sink, 'sink_ceiling_exceeded');
});

test('a URL with the text percent-encoded in its query is classified decoded', { timeout: 120_000 }, async () => {
  const r = await afterMarked(async (g) => assert.equal(summary(await call(g, 'query', {})), 'ok'));
  assert.deepEqual(r.labels, [['confidential', 'classify']]);
  assert.equal(r.sink, 'sink_ceiling_exceeded');
});

test('an image blob is not read as text (control)', { timeout: 120_000 }, async () => {
  const r = await afterMarked(async (g) => assert.equal(summary(await call(g, 'blob', { mimeType: 'image/png' })), 'ok'));
  assert.deepEqual(r.labels, []);
  assert.equal(r.sink, 'ok');
});
