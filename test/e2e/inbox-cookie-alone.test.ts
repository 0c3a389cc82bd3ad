// The inbox's session cookie alone reads nothing and decides nothing (ADR 069). Browsers send a
// cookie to every port of its host and SameSite counts every port of 127.0.0.1 as one site, so
// any other web server on 127.0.0.1 the approver's browser visits gets `cloakpipe_inbox=…`. With
// it alone (as that server would replay it, no browser), every API route that reads requests or
// decides is refused, and nothing is signed; with the API token the login answered, which the
// page keeps per origin, the same flow works. Real binary, real gate.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { apiRoutes, closeGateWithInbox, openGateWithInbox, type RunningInbox } from '../helpers/inbox-server.js';
import { call, ledger, records, type RunningGate, type Setup } from '../helpers/recording-gate.js';

let s: Setup;
let g: RunningGate;
let inbox: RunningInbox;
before(async () => void ({ s, g, inbox } = await openGateWithInbox()));
after(() => closeGateWithInbox(g, inbox));

/** One request as curl would send it: the cookie, no Origin, no Fetch Metadata; an event stream is read for 1.5 s. */
function curl(method: string, path: string, headers: Record<string, string>): Promise<{ status: number; body: string }> {
  const port = Number(new URL(inbox.url).port);
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method, path, headers: { host: `127.0.0.1:${port}`, ...headers } }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      const done = () => resolve({ status: res.statusCode!, body });
      res.on('end', done);
      if (String(res.headers['content-type']).startsWith('text/event-stream')) setTimeout(() => (res.destroy(), done()), 1500);
    });
    req.on('error', reject);
    req.end();
  });
}

const receipts = () => {
  const db = new Database(join(s.home, 'operations.db'), { readonly: true });
  try {
    return (db.prepare('SELECT COUNT(*) AS n FROM offered_receipts').get() as { n: number }).n;
  } finally {
    db.close();
  }
};

test('with the session cookie alone no route reads a request or decides one; with the API token the flow works', async () => {
  const to = 'cookie-alone-canary@example.com';
  const refused = await call(g, 'send_email', { to, body: 'customer data' });
  assert.ok(!refused.ok && refused.reason === 'approval_required');

  const login = await fetch(`${inbox.url}/login`, { method: 'POST', body: new URLSearchParams({ token: inbox.token }), redirect: 'manual' });
  assert.ok(login.status < 400, `logged in: ${login.status}`);
  const cookie = login.headers.get('set-cookie')!.split(';')[0];
  assert.match(cookie, /^cloakpipe_inbox=/);
  // The id is the one thing such a server would have to learn elsewhere: give it the real one.
  const id = requestId(String(refused.data.fingerprint));

  const alone = { cookie };
  const routes: [string, string][] = [...apiRoutes(id), ['POST', '/logout']];
  for (const [method, path] of routes) {
    const r = await curl(method, path, alone);
    assert.ok(r.status === 401 || r.status === 403, `${method} ${path} with the cookie alone: ${r.status} ${r.body}`);
    assert.ok(!r.body.includes(to) && !r.body.includes(id) && !r.body.includes('"csrf"'), `${method} ${path}: nothing of the session or the request in ${r.body}`);
  }
  assert.equal(receipts(), 0, 'nothing signed');
  assert.ok(!ledger(s).some((e) => e.kind === 'operator'), 'nothing decided');
  const retry = await call(g, 'send_email', { to, body: 'customer data' });
  assert.equal(retry.ok ? 'ran' : retry.reason, 'approval_required', 'the call still waits');

  // The page's way: the API token from the login's answer, in X-CSRF-Token, beside the cookie.
  const { csrf } = (await login.json()) as { csrf: string };
  assert.match(csrf, /^[A-Za-z0-9_-]{43}$/);
  const withToken = { cookie, 'x-csrf-token': csrf };
  assert.equal((await curl('GET', '/api/session', withToken)).status, 200);
  assert.ok((await curl('GET', '/api/requests', withToken)).body.includes(to));
  const stream = await curl('GET', '/api/events', withToken);
  assert.equal(stream.status, 200);
  assert.match(stream.body, /event: requests/);
  // The token without its cookie is nothing either.
  assert.equal((await curl('GET', '/api/requests', { 'x-csrf-token': csrf })).status, 401);
  const ok = await curl('POST', `/api/requests/${id}/approve`, withToken);
  assert.equal(ok.status, 200, ok.body);
  assert.equal(receipts(), 1);
  const ran = await call(g, 'send_email', { to, body: 'customer data' });
  assert.ok(ran.ok, JSON.stringify(ran));
  assert.equal(records(s).filter((r) => r.arguments.to === to).length, 1, 'ran once, after the approval');
  assert.equal((await curl('POST', '/logout', withToken)).status, 204);
  assert.equal((await curl('GET', '/api/requests', withToken)).status, 401, 'logged out');
});

/** The request's id, read from the store itself (not through the API under test). */
function requestId(fingerprint: string): string {
  const db = new Database(join(s.home, 'operations.db'), { readonly: true });
  try {
    return (db.prepare('SELECT id FROM approval_requests WHERE fingerprint = ?').get(fingerprint) as { id: string }).id;
  } finally {
    db.close();
  }
}
