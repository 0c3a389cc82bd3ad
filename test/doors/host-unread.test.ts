// A host that stops reading the gate's stdout while the server floods it with notifications
// (which no --max-in-flight bounds): the gate read every one and queued it for the host, so it
// grew without end. Now, past 8 MiB the host has not read, the gate stops reading the server
// (and the host) until the host catches up; nothing is lost: once the host reads again, every
// notification reaches it, then the call's answer. Real binary, raw host, a flooding server.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { helperScript, makeHome, writeFiles, PERMIT_ALL } from '../helpers/cli.js';
import { RawGate } from '../helpers/raw-gate.js';
import { growthWhileUnread, readBytes, readFloodInOrder, untilReadingStops } from '../helpers/proc-figures.js';

const MANIFEST = `version: 1
release: host-unread@1
tools:
  flood: { effect: read, arguments: { count: { type: integer }, bytes: { type: integer } } }
`;
const MIB = 1024 * 1024;
const FLOOD = 192; // notifications of 1 MiB each

test('a host that reads nothing while the server floods it: the gate stops reading the server instead of holding the flood', { timeout: 300_000 }, async () => {
  const f = writeFiles({ 'm.yaml': MANIFEST, 'p.cedar': PERMIT_ALL });
  const gate = new RawGate({ home: makeHome(), manifest: f['m.yaml'], policy: f['p.cedar'], upstream: [process.execPath, helperScript('flooding-server.js')] });
  await gate.initialize();
  const grown = await growthWhileUnread(gate, FLOOD);
  assert.ok(grown < 64 * MIB, `the gate grew by ${Math.round(grown / MIB)} MiB while the host read nothing (${FLOOD} MiB sent its way)`);

  await readFloodInOrder(gate, 'flood', FLOOD); // the host reads again
  await gate.end();
});

test('a host that leaves without reading the flood: the gate still ends, and its server with it', { timeout: 300_000 }, async () => {
  const f = writeFiles({ 'm.yaml': MANIFEST, 'p.cedar': PERMIT_ALL });
  const gate = new RawGate({ home: makeHome(), manifest: f['m.yaml'], policy: f['p.cedar'], upstream: [process.execPath, helperScript('flooding-server.js')] });
  await gate.initialize();
  const pid = gate.child.pid!;
  gate.child.stdout!.pause();
  gate.send(JSON.stringify({ jsonrpc: '2.0', id: 'flood', method: 'tools/call', params: { name: 'flood', arguments: { count: FLOOD, bytes: MIB - 200 } } }) + '\n');
  await untilReadingStops(pid, readBytes(pid), Infinity);
  // The host goes away: both pipes close, what the gate holds for it can never be written.
  gate.child.stdout!.destroy();
  gate.child.stdin!.end();
  const ended = await Promise.race([gate.exited.then(() => 'ended'), new Promise((r) => setTimeout(() => r('still running'), 60_000))]);
  assert.equal(ended, 'ended');
});
