// A flood of idle connections to the HTTP door (ADR 085). Each holds a descriptor in the gate,
// which its upstreams and databases need too; the 10 s bound on headers (ADR 068) frees them only
// after 10 s, and a client that opens them faster than that held as many as it liked.
// --max-connections bounds them: one beyond is closed at once. Through the real binary with
// server-everything behind it: the flood is cut at the bound, the gate's descriptors stay within
// it, and once the flood goes, an SDK host connects and calls as before.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { floodIdle } from '../helpers/connection-flood.js';
import { EVERYTHING, makeHome, writeFiles, PERMIT_ALL } from '../helpers/cli.js';
import { httpClient, startHttpGate } from '../helpers/http-gate.js';

const CAP = 16;
const FLOOD = 64;

test(`--max-connections ${CAP}: of ${FLOOD} idle sockets, those past the bound are closed at once; then a host calls as before`, { timeout: 90_000 }, async () => {
  const f = writeFiles({ 'm.yaml': 'version: 1\nrelease: flood@1\ntools:\n  echo: { effect: read, arguments: { message: { type: string } } }\n', 'p.cedar': PERMIT_ALL });
  const g = await startHttpGate({ home: makeHome(), manifest: f['m.yaml'], policy: f['p.cedar'], flags: ['--max-connections', String(CAP)], upstream: [process.execPath, EVERYTHING] });
  const url = new URL(g.url);
  try {
    await floodIdle(url, g.child.pid!, FLOOD, CAP, 'the gate');
    const c = await httpClient(g.url);
    const r = await c.callTool({ name: 'echo', arguments: { message: 'after the flood' } });
    assert.match((r.content as { text: string }[])[0].text, /after the flood/);
    await c.close();
  } finally {
    assert.equal(await g.stop(), 0);
  }
});
