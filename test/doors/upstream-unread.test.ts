// A server that stops reading its stdin while the host goes on sending notifications (which no
// --max-in-flight bounds). The gate read every one and held it for the server: a host could grow
// the gate's memory without end. Now the gate stops reading the host while the server has more
// than 8 MiB unread, and nothing is lost: once the server reads again, every notification
// reaches it, in order before the host's next request. Real binary, raw host lines.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { helperScript, makeHome, writeFiles, PERMIT_ALL } from '../helpers/cli.js';
import { RawGate } from '../helpers/raw-gate.js';
import { answerTo } from '../helpers/raw-session.js';
import { readBytes, rss } from '../helpers/proc-figures.js';

const MANIFEST = `version: 1
release: upstream-unread@1
tools: {}
`;
const MIB = 1024 * 1024;
const FLOOD = 256; // notifications of 1 MiB each

/** The gate's child running the server (it has a watchdog child too). */
const serverPid = (gatePid: number) =>
  readFileSync(`/proc/${gatePid}/task/${gatePid}/children`, 'utf8').trim().split(/\s+/).map(Number)
    .find((p) => readFileSync(`/proc/${p}/cmdline`, 'utf8').includes('unread-server'))!;

test('a server that reads nothing: the gate stops reading the host instead of holding its messages', { timeout: 300_000 }, async () => {
  const f = writeFiles({ 'm.yaml': MANIFEST, 'p.cedar': PERMIT_ALL });
  const gate = new RawGate({ home: makeHome(), manifest: f['m.yaml'], policy: f['p.cedar'], upstream: [process.execPath, helperScript('unread-server.js')] });
  await gate.initialize();
  const pid = gate.child.pid!;
  const before = rss(pid);
  const pad = 'n'.repeat(MIB - 100);
  let written = 0;
  let drained = true;
  const stdin = gate.child.stdin!;
  // Write the flood, one notification whenever the pipe takes more; stop when the gate has read
  // nothing for a while (it stopped reading) or everything is written.
  let lastRead = readBytes(pid);
  let still = 0;
  while (written < FLOOD && still < 20) {
    if (drained) {
      drained = stdin.write(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/roots/list_changed', params: { _meta: { pad, n: written } } }) + '\n');
      written++;
      if (!drained) stdin.once('drain', () => (drained = true));
      continue;
    }
    await new Promise((r) => setTimeout(r, 100));
    const read = readBytes(pid);
    still = read === lastRead ? still + 1 : 0;
    lastRead = read;
  }
  const grown = rss(pid) - before;
  assert.ok(grown < 64 * MIB, `the gate grew by ${Math.round(grown / MIB)} MiB while the server read nothing (${written} MiB sent)`);
  assert.ok(written < FLOOD, 'the host was not read to the end');

  // The server reads again: every notification reaches it, then the ping.
  process.kill(serverPid(pid), 'SIGUSR2');
  while (written < FLOOD) {
    if (!stdin.write(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/roots/list_changed', params: { _meta: { pad, n: written++ } } }) + '\n'))
      await new Promise((r) => stdin.once('drain', r));
  }
  stdin.write(JSON.stringify({ jsonrpc: '2.0', id: 'count', method: 'ping' }) + '\n');
  const answer = await answerTo(gate, 'count', 120_000);
  assert.equal(answer.result._meta.notifications, FLOOD + 1, 'nothing lost (notifications/initialized, then the flood)');
  await gate.end();
});
