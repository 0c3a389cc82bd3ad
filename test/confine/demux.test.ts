import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Demuxer, type StreamKind } from '../../src/confine/engine.js';

function frame(kind: number, payload: Buffer): Buffer {
  const h = Buffer.alloc(8);
  h[0] = kind;
  h.writeUInt32BE(payload.length, 4);
  return Buffer.concat([h, payload]);
}

test('demultiplexes stdout and stderr across arbitrary chunk boundaries', () => {
  const wire = Buffer.concat([frame(1, Buffer.from('hello ')), frame(2, Buffer.from('err')), frame(1, Buffer.from('world\n'))]);
  for (let step = 1; step <= wire.length; step++) {
    const got: Record<StreamKind, string> = { stdout: '', stderr: '' };
    const d = new Demuxer((k, c) => (got[k] += c.toString()), () => assert.fail('no error expected'));
    for (let i = 0; i < wire.length; i += step) d.push(wire.subarray(i, i + step));
    assert.deepEqual(got, { stdout: 'hello world\n', stderr: 'err' });
  }
});

test('a header claiming a huge size is refused without buffering', () => {
  const h = Buffer.alloc(8);
  h[0] = 1;
  h.writeUInt32BE(0xffffffff, 4);
  let err = '';
  let bytes = 0;
  const d = new Demuxer((_k, c) => (bytes += c.length), (r) => (err = r), 1024 * 1024);
  d.push(Buffer.concat([h, Buffer.alloc(100)]));
  assert.equal(err, 'stream frame too large');
  assert.equal(bytes, 0);
});

test('payload is passed on as it arrives, not held per frame', () => {
  const h = Buffer.alloc(8);
  h[0] = 1;
  h.writeUInt32BE(1000, 4);
  let bytes = 0;
  const d = new Demuxer((_k, c) => (bytes += c.length), () => assert.fail());
  d.push(h);
  d.push(Buffer.alloc(10));
  assert.equal(bytes, 10);
});

test('an unknown stream kind or a dirty header is a protocol error', () => {
  for (const bad of [[3, 0, 0, 0], [0, 0, 0, 0], [1, 1, 0, 0]]) {
    let err = '';
    const d = new Demuxer(() => {}, (r) => (err = r));
    d.push(Buffer.from([...bad, 0, 0, 0, 1, 65]));
    assert.equal(err, 'invalid stream header');
  }
});
