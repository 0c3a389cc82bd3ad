// Every answer of `cloakpipe inbox serve` carries the headers that keep its page its own (ADR
// 034): a CSP that allows only the inbox itself (no inline script or style, no outside source, no
// framing), nosniff, no framing (X-Frame-Options too, for older browsers), Referrer-Policy
// same-origin, and no-store, so no answer holding a request's arguments is kept in a cache.
// Pages, assets, the API, the event stream, redirects and every refusal (401, 403, 404, 410, 421).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { request, type IncomingHttpHeaders } from 'node:http';
import { closeGateWithInbox, openGateWithInbox, type RunningInbox } from '../helpers/inbox-server.js';
import { call, type RunningGate } from '../helpers/recording-gate.js';

let g: RunningGate;
let inbox: RunningInbox;
before(async () => void ({ g, inbox } = await openGateWithInbox()));
after(() => closeGateWithInbox(g, inbox));

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

/** One request as sent, Host and Origin included (fetch cannot set Host); an event stream is cut after its headers. */
function raw(method: string, path: string, headers: Record<string, string> = {}, body?: string): Promise<Answer> {
  const port = Number(new URL(inbox.url).port);
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method, path, headers: { host: `127.0.0.1:${port}`, ...headers } }, (res) => {
      if (String(res.headers['content-type']).startsWith('text/event-stream')) {
        resolve({ status: res.statusCode!, headers: res.headers, body: '' });
        return void res.destroy();
      }
      let text = '';
      res.on('data', (d: Buffer) => (text += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: text }));
    });
    req.setTimeout(10_000, () => req.destroy(new Error(`${method} ${path}: no answer in 10 s`)));
    req.on('error', reject);
    req.end(body);
  });
}

function checkHeaders(what: string, a: Answer): void {
  const h = a.headers;
  const csp = String(h['content-security-policy'] ?? '');
  assert.ok(csp, `${what}: a CSP`);
  const directives = new Map(csp.split(';').map((d) => d.trim().split(/\s+/)).filter((d) => d[0]).map(([name, ...sources]) => [name, sources]));
  for (const [name, sources] of directives)
    for (const src of sources) assert.ok(src === "'self'" || src === "'none'", `${what}: ${name} allows only the inbox itself, not ${src}`);
  assert.deepEqual(directives.get('default-src'), ["'none'"], `${what}: default-src 'none'`);
  assert.deepEqual(directives.get('script-src'), ["'self'"], `${what}: scripts from the inbox only, none inline`);
  assert.deepEqual(directives.get('style-src'), ["'self'"], `${what}: styles from the inbox only, none inline`);
  assert.deepEqual(directives.get('frame-ancestors'), ["'none'"], `${what}: never framed`);
  assert.deepEqual(directives.get('base-uri'), ["'none'"], `${what}: no <base>`);
  assert.deepEqual(directives.get('form-action'), ["'self'"], `${what}: forms post to the inbox only`);
  assert.equal(h['x-content-type-options'], 'nosniff', `${what}: nosniff`);
  assert.equal(h['x-frame-options'], 'DENY', `${what}: X-Frame-Options`);
  // Not no-referrer: under it a form's POST carries Origin: null, which the inbox must refuse.
  assert.equal(h['referrer-policy'], 'same-origin', `${what}: Referrer-Policy`);
  assert.equal(h['cache-control'], 'no-store', `${what}: no-store`);
  assert.equal(h['access-control-allow-origin'], undefined, `${what}: no CORS`);
  assert.equal(h['strict-transport-security'], undefined, `${what}: no HSTS in clear (inbox-tls.test.ts has it over TLS)`);
}

test('every answer, page, asset, API, stream, redirect or refusal, carries the CSP, nosniff, no framing, Referrer-Policy and no-store', async () => {
  const to = 'headers-canary@example.com';
  const refused = await call(g, 'send_email', { to });
  assert.ok(!refused.ok && refused.reason === 'approval_required');
  const form = { 'content-type': 'application/x-www-form-urlencoded' };
  const login = await raw('POST', '/login', form, new URLSearchParams({ token: inbox.token }).toString());
  assert.equal(login.status, 200);
  const cookie = String(login.headers['set-cookie']).split(';')[0];
  const { csrf } = JSON.parse(login.body) as { csrf: string };
  // The cookie alone reads nothing past the page itself (ADR 069); `as` is what the page sends.
  const alone = { cookie };
  const as = { cookie, 'x-csrf-token': csrf };
  const id = (JSON.parse((await raw('GET', '/api/requests', as)).body) as { requests: { id: string; arguments: { to: string } }[] }).requests.find((r) => r.arguments.to === to)!.id;
  const post = as;

  const answers: [string, Answer, number][] = [
    ['the login page', await raw('GET', '/login'), 200],
    ['a wrong token', await raw('POST', '/login', form, 'token=not-the-token-0123456789'), 401],
    ['the login', login, 200],
    ['the page, logged out', await raw('GET', '/'), 303],
    ['the page', await raw('GET', '/', alone), 200],
    ['app.js', await raw('GET', '/app.js'), 200],
    ['app.css', await raw('GET', '/app.css'), 200],
    ['favicon', await raw('GET', '/favicon.ico'), 204],
    ['the session', await raw('GET', '/api/session', as), 200],
    ['the list (arguments)', await raw('GET', '/api/requests', as), 200],
    ['one request (arguments)', await raw('GET', `/api/requests/${id}`, as), 200],
    ['the event stream', await raw('GET', '/api/events', as), 200],
    ['the list, logged out', await raw('GET', '/api/requests'), 401],
    ['the list, the cookie alone', await raw('GET', '/api/requests', alone), 403],
    ['no CSRF token', await raw('POST', `/api/requests/${id}/approve`, alone), 403],
    ['another origin', await raw('POST', `/api/requests/${id}/approve`, { ...post, origin: 'http://evil.example' }), 403],
    ['another Host name', await raw('GET', '/api/requests', { ...as, host: 'evil.example' }), 421],
    ['no such request', await raw('GET', '/api/requests/nope', as), 404],
    ['no such page', await raw('GET', '/nowhere', as), 404],
    ['an approval', await raw('POST', `/api/requests/${id}/approve`, post), 200],
    ['a second decision', await raw('POST', `/api/requests/${id}/deny`, post), 410],
    ['the logout', await raw('POST', '/logout', post), 204],
  ];
  for (const [what, a, status] of answers) {
    assert.equal(a.status, status, `${what}: ${a.body}`);
    checkHeaders(what, a);
  }
  // Each body is what it says it is (nosniff leaves browsers nothing else to go by).
  const types = new Map(answers.map(([what, a]) => [what, String(a.headers['content-type'])]));
  assert.match(types.get('the page')!, /^text\/html; charset=utf-8$/);
  assert.match(types.get('the login')!, /^application\/json; charset=utf-8$/);
  assert.match(types.get('app.js')!, /^text\/javascript; charset=utf-8$/);
  assert.match(types.get('app.css')!, /^text\/css; charset=utf-8$/);
  assert.match(types.get('one request (arguments)')!, /^application\/json; charset=utf-8$/);
  assert.match(types.get('the event stream')!, /^text\/event-stream/);
  // The pages hold no inline script or style for the CSP to have to allow.
  for (const what of ['the login page', 'the page']) {
    const html = answers.find(([w]) => w === what)![1].body;
    assert.doesNotMatch(html, /<script(?![^>]*\ssrc=)[^>]*>|<style|\sstyle=|\son[a-z]+=/i, `${what}: no inline script, style or handler`);
  }
});
