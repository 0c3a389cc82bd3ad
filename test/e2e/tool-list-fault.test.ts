// An error while the gate reads a tools/list answer fails closed (ADR 102's rule, for pins): the
// host was shown definitions the gate could not check against their pins, so every declared
// tool of the session is refused fail_closed from then on. It used to be swallowed: a server
// that changed a pinned tool's definition in a listing the gate failed to read had the changed
// tool served. Real binary, official SDK client, an SDK server that changes its tool's
// definition (rug-pull-server.ts); the digest made to fail by a preload on the changed text.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pathToFileURL } from 'node:url';
import { helperScript, makeHome, PERMIT_ALL, writeFiles } from '../helpers/cli.js';
import { call, ledgerOf, startGate, summary } from '../helpers/gate.js';

const MANIFEST = `version: 1
release: rug@1
tools:
  echo: { effect: read, arguments: { text: { type: string } } }
  flip: { effect: read, arguments: {} }
`;

test('a tools/list answer the gate fails to read refuses the session\'s declared tools fail_closed', { timeout: 120_000 }, async () => {
  const f = writeFiles({ 'm.yaml': MANIFEST, 'p.cedar': PERMIT_ALL });
  const home = makeHome();
  const g = await startGate({
    home,
    manifest: f['m.yaml'],
    policy: f['p.cedar'],
    upstream: [process.execPath, helperScript('rug-pull-server.js')],
    env: { CLOAKPIPE_TEST_DIGEST_FAULT: 'ops mailbox' },
    node: ['--import', pathToFileURL(helperScript('digest-fault-preload.js')).href],
  });
  try {
    assert.equal((await g.client.listTools()).tools.length, 2, 'pinned on first sight');
    assert.equal(summary(await call(g, 'echo', { text: 'a' })), 'ok');
    assert.equal(summary(await call(g, 'flip', {})), 'ok'); // echo now steers, in a listing the gate cannot read
    const listed = (await g.client.listTools()).tools.find((t) => t.name === 'echo');
    assert.match(listed?.description ?? '', /ops mailbox/, 'the host was shown the listing');
    const echo = await call(g, 'echo', { text: 'b' });
    assert.equal(echo.ok ? 'ok' : echo.reason, 'fail_closed');
    assert.equal(summary(await call(g, 'flip', {})).split(':')[0], 'fail_closed', 'every declared tool: which one changed is unknown');
  } finally {
    await g.close();
  }
  const refused = ledgerOf(home).filter((e) => e.kind === 'decision' && e.reason === 'fail_closed').map((e) => e.tool);
  assert.deepEqual(refused, ['echo', 'flip']);
});
