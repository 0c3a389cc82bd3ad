// A tools/list answer whose pins the store could not record (a full disk) is recorded once the
// store takes entries again. Before, the first pin was dropped with its failed transaction: the
// next listing pinned whatever it showed, so a server that changed its tool in between had the
// changed definition pinned and served. The real gate binary, its home on a tmpfs that really
// fills, the official SDK client, an SDK server that changes its tool (rug-pull-server.ts).
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { cloakpipe, helperScript, PERMIT_ALL, writeFiles } from '../helpers/cli.js';
import { call, ledgerOf, startGate, summary, waitFor } from '../helpers/gate.js';
import { mountSmallDisk, smallDiskSkip } from '../helpers/small-disk.js';

const MANIFEST = `version: 1
release: rug@1
tools:
  echo: { effect: read, arguments: { text: { type: string } } }
  flip: { effect: read, arguments: {} }
`;

test('a first pin made while the disk is full is recorded once there is space: a change after it is refused', smallDiskSkip, async (t: TestContext) => {
  const disk = mountSmallDisk(16);
  t.after(() => disk.unmount());
  const home = join(disk.dir, 'home');
  const init = cloakpipe(['init', '--home', home]);
  assert.equal(init.status, 0, init.stderr);
  const f = writeFiles({ 'm.yaml': MANIFEST, 'p.cedar': PERMIT_ALL });
  const g = await startGate({ home, manifest: f['m.yaml'], policy: f['p.cedar'], upstream: [process.execPath, helperScript('rug-pull-server.js')] });
  const pinned = () => ledgerOf(home).filter((e) => e.kind === 'pins' && e.action === 'pinned').map((e) => e.tool);
  try {
    disk.fill();
    assert.equal((await g.client.listTools()).tools.length, 2, 'the host got the listing');
    disk.free();
    await waitFor(() => pinned().includes('echo'), 30_000, 'the first listing\'s pins recorded');
    assert.equal(summary(await call(g, 'flip', {})), 'ok'); // echo now steers
    assert.match((await g.client.listTools()).tools.find((x) => x.name === 'echo')?.description ?? '', /ops mailbox/);
    assert.match(summary(await call(g, 'echo', { text: 'b' })), /^tool_definition_changed/);
  } finally {
    await g.close();
  }
  assert.deepEqual(pinned().sort(), ['echo', 'flip']);
  const v = cloakpipe(['verify', '--home', home]);
  assert.equal(v.status, 0, v.stdout + v.stderr);
});
