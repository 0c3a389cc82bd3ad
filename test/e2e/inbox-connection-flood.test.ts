// A flood of idle connections to the approval inbox (ADR 085, as the HTTP door). Each held a
// descriptor of the inbox, which its store needs too, until the 10 s bound on headers closed it:
// a client that opened them faster held as many as it liked. --max-connections bounds them: one
// beyond is closed at once. Through the real binary: the flood is cut at the bound, the inbox's
// descriptors stay within it, and once it goes a logged-in client reads the list as before.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { floodIdle } from '../helpers/connection-flood.js';
import { inboxClient, startInbox } from '../helpers/inbox-server.js';
import { setup } from '../helpers/recording-gate.js';

const CAP = 16;
const FLOOD = 64;

test(`inbox --max-connections ${CAP}: of ${FLOOD} idle sockets, those past the bound are closed at once; then the page's API answers`, { timeout: 60_000 }, async () => {
  const s = setup();
  const inbox = await startInbox({ home: s.home, approverKey: s.approverKey, flags: ['--max-connections', String(CAP)] });
  const url = new URL(inbox.url);
  try {
    await floodIdle(url, inbox.pid, FLOOD, CAP, 'the inbox');
    const api = await inboxClient(inbox);
    const list = await api('/api/requests');
    assert.equal(list.status, 200);
    assert.deepEqual(JSON.parse(list.body), { requests: [] });
  } finally {
    await inbox.stop();
  }
});

test('inbox --max-connections must be a positive integer (exit 2)', async () => {
  const s = setup();
  await assert.rejects(startInbox({ home: s.home, approverKey: s.approverKey, flags: ['--max-connections', '0'] }), /exited 2[^]*--max-connections must be a positive integer/);
});
