// A host that stops reading the gate's stdout while the server floods it with notifications
// (which no --max-in-flight bounds): the gate read every one and queued it for the host, so it
// grew without end. Now, past 8 MiB the host has not read, the gate stops reading the server
// (and the host) until the host catches up; nothing is lost: once the host reads again, every
// notification reaches it, then the call's answer. Real binary, raw host, a flooding server.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { helperScript, makeHome, writeFiles, PERMIT_ALL } from '../helpers/cli.js';
import { RawGate } from '../helpers/raw-gate.js';
import { answerTo } from '../helpers/raw-session.js';

const MANIFEST = `version: 1
release: host-unread@1
tools:
  flood: { effect: read, arguments: { count: { type: integer }, bytes: { type: integer } } }
`;
const MIB = 1024 * 1024;
const FLOOD = 192; // notifications of 1 MiB each

/** The process's resident memory, in bytes. */
const rss = (pid: number) => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) * 1024;
/** Bytes the process has read (any file descriptor). */
const readBytes = (pid: number) => Number(/rchar: (\d+)/.exec(readFileSync(`/proc/${pid}/io`, 'utf8'))![1]);

test('a host that reads nothing while the server floods it: the gate stops reading the server instead of holding the flood', { timeout: 300_000 }, async () => {
  const f = writeFiles({ 'm.yaml': MANIFEST, 'p.cedar': PERMIT_ALL });
  const gate = new RawGate({ home: makeHome(), manifest: f['m.yaml'], policy: f['p.cedar'], upstream: [process.execPath, helperScript('flooding-server.js')] });
  await gate.initialize();
  const pid = gate.child.pid!;
  const before = rss(pid);
  gate.child.stdout!.pause(); // the host stops reading
  gate.send(JSON.stringify({ jsonrpc: '2.0', id: 'flood', method: 'tools/call', params: { name: 'flood', arguments: { count: FLOOD, bytes: MIB - 200 } } }) + '\n');
  // Wait until the gate has read nothing for 2 s (it stopped reading), or has read the whole flood.
  let last = readBytes(pid);
  for (let still = 0, waited = 0; still < 20 && last - before < FLOOD * MIB * 2; waited++) {
    assert.ok(waited < 1200, 'the gate goes on reading for two minutes');
    await new Promise((r) => setTimeout(r, 100));
    const read = readBytes(pid);
    still = read === last ? still + 1 : 0;
    last = read;
  }
  const grown = rss(pid) - before;
  assert.ok(grown < 64 * MIB, `the gate grew by ${Math.round(grown / MIB)} MiB while the host read nothing (${FLOOD} MiB sent its way)`);

  // The host reads again: every notification, in order, then the call's answer.
  gate.child.stdout!.resume();
  const seen: number[] = [];
  for (;;) {
    const m = await gate.next(120_000);
    if (m.method === 'notifications/message') seen.push(m.params.data.n);
    else if (m.id === 'flood') break;
  }
  assert.deepEqual(seen, [...Array(FLOOD).keys()], 'nothing lost, nothing reordered');
  gate.send(JSON.stringify({ jsonrpc: '2.0', id: 'count', method: 'ping' }) + '\n');
  assert.equal((await answerTo(gate, 'count')).result._meta.sent, FLOOD);
  await gate.end();
});

test('a host that leaves without reading the flood: the gate still ends, and its server with it', { timeout: 300_000 }, async () => {
  const f = writeFiles({ 'm.yaml': MANIFEST, 'p.cedar': PERMIT_ALL });
  const gate = new RawGate({ home: makeHome(), manifest: f['m.yaml'], policy: f['p.cedar'], upstream: [process.execPath, helperScript('flooding-server.js')] });
  await gate.initialize();
  const pid = gate.child.pid!;
  gate.child.stdout!.pause();
  gate.send(JSON.stringify({ jsonrpc: '2.0', id: 'flood', method: 'tools/call', params: { name: 'flood', arguments: { count: FLOOD, bytes: MIB - 200 } } }) + '\n');
  let last = readBytes(pid);
  for (let still = 0; still < 20; ) {
    await new Promise((r) => setTimeout(r, 100));
    const read = readBytes(pid);
    still = read === last ? still + 1 : 0;
    last = read;
  }
  // The host goes away: both pipes close, what the gate holds for it can never be written.
  gate.child.stdout!.destroy();
  gate.child.stdin!.end();
  const ended = await Promise.race([gate.exited.then(() => 'ended'), new Promise((r) => setTimeout(() => r('still running'), 60_000))]);
  assert.equal(ended, 'ended');
});
