// The inbox's event stream lasts no longer than the session it was opened in: a stream held open
// after its logout went on telling its holder each time a call came to wait or was decided.
// Through the real binary: a stream opened, the session logged out, the stream ends; a stream of
// another session stays open and is told of the next request.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { get, type IncomingMessage } from 'node:http';
import { closeGateWithInbox, inboxLogin, openGateWithInbox, type RunningInbox } from '../helpers/inbox-server.js';
import { call, type RunningGate } from '../helpers/recording-gate.js';

let g: RunningGate;
let inbox: RunningInbox;
before(async () => void ({ g, inbox } = await openGateWithInbox()));
after(() => closeGateWithInbox(g, inbox));

interface Stream {
  text: () => string;
  ended: Promise<void>;
  close: () => void;
}

function events(a: { cookie: string; csrf: string }): Promise<Stream> {
  return new Promise((resolve, reject) => {
    const req = get(`${inbox.url}/api/events`, { headers: { cookie: a.cookie, 'x-csrf-token': a.csrf } }, (res: IncomingMessage) => {
      assert.equal(res.statusCode, 200);
      let text = '';
      res.on('data', (d: Buffer) => (text += d.toString()));
      const ended = new Promise<void>((r) => res.once('close', () => r()));
      resolve({ text: () => text, ended, close: () => req.destroy() });
    });
    req.on('error', reject);
  });
}

const within = (p: Promise<void>, ms: number) => Promise.race([p.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), ms))]);

test('logging out ends the event streams of that session, and only those', async () => {
  const a = await inboxLogin(inbox);
  const b = await inboxLogin(inbox);
  const sa = await events(a);
  const sb = await events(b);
  const out = await fetch(`${inbox.url}/logout`, { method: 'POST', headers: { cookie: a.cookie, 'x-csrf-token': a.csrf } });
  assert.equal(out.status, 204);
  assert.ok(await within(sa.ended, 3000), 'the logged-out session\'s stream ends');
  assert.equal((await fetch(`${inbox.url}/api/events`, { headers: { cookie: a.cookie, 'x-csrf-token': a.csrf } })).status, 401, 'and cannot be opened again');

  const before = sb.text().length;
  const refused = await call(g, 'send_email', { to: 'events-session@example.com' });
  assert.ok(!refused.ok && refused.reason === 'approval_required');
  for (let i = 0; i < 50 && sb.text().length === before; i++) await new Promise((r) => setTimeout(r, 100));
  assert.match(sb.text().slice(before), /event: requests/, 'the other session\'s stream is told of the new request');
  assert.equal(await within(sb.ended, 200), false, 'and stays open');
  sb.close();
});
