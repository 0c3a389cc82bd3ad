// `cloakpipe inbox serve` as it starts with nothing but an approver key (inbox.md, ADR 034):
// - no --auth-token-file: it prints a login link with a new token in the fragment; opened in a
//   real browser (Debian's chromium), the page posts the token and gets the HttpOnly,
//   SameSite=Strict session cookie; the token is in no URL any request carries (never a query),
//   nor in the address bar afterwards, and a token in a query logs nobody in;
// - no --listen: it serves 127.0.0.1:8932;
// - no --ttl: an approval's receipt expires 15 minutes after it is issued.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import type { Browser, HTTPRequest } from 'puppeteer-core';
import { browserSkip, launchBrowser } from '../helpers/browser.js';
import { inboxClient, startInbox, type RunningInbox } from '../helpers/inbox-server.js';
import { call, setup, startGate } from '../helpers/recording-gate.js';

let browser: Browser | undefined;
after(async () => {
  await browser?.close();
});

test('the printed login link: the token rides in the fragment, is posted once, and buys an HttpOnly SameSite=Strict cookie', browserSkip, async () => {
  const s = setup();
  const inbox = await startInbox({ home: s.home, approverKey: s.approverKey, printedToken: true });
  try {
    const link = inbox.loginLink!;
    assert.match(link, /^http:\/\/127\.0\.0\.1:\d+\/login#token=[A-Za-z0-9_-]{32}$/, 'a 192-bit token in the fragment');
    assert.equal(new URL(link).search, '', 'never in a query');
    const token = inbox.token;
    assert.equal(inbox.stderr().split(token).length - 1, 1, 'printed once, in the link');

    // A token in a query (a link someone "fixed") logs nobody in: it would reach logs and Referers.
    const byQuery = await fetch(`${inbox.url}/login?token=${encodeURIComponent(token)}`, { redirect: 'manual' });
    assert.equal(byQuery.status, 200, 'the login page, nothing more');
    assert.equal(byQuery.headers.get('set-cookie'), null);

    browser = await launchBrowser();
    const ctx = await browser.createBrowserContext();
    const page = await ctx.newPage();
    const seen: { method: string; url: string; headers: Record<string, string>; body: string }[] = [];
    page.on('request', (r: HTTPRequest) => seen.push({ method: r.method(), url: r.url(), headers: r.headers(), body: r.postData() ?? '' }));
    await page.goto(link);
    // The login page's script posts the fragment's token; the inbox answers with the cookie and the page.
    for (const until = Date.now() + 15_000; ; await new Promise((r) => setTimeout(r, 100))) {
      if (new URL(page.url()).pathname === '/' && (await page.$('#signer').catch(() => null))) break;
      if (Date.now() > until) throw new Error(`not logged in by the link: at ${page.url()}`);
    }
    await page.waitForFunction(() => !document.getElementById('signer')!.textContent!.startsWith('Loading'), { timeout: 15_000 });
    assert.ok(!page.url().includes(token) && !page.url().includes('#'), 'the token left the address bar');
    const [cookie, ...others] = await page.cookies();
    assert.equal(others.length, 0);
    assert.equal(cookie.name, 'cloakpipe_inbox');
    assert.equal(cookie.httpOnly, true);
    assert.equal(cookie.sameSite, 'Strict');
    assert.equal(cookie.path, '/');
    assert.notEqual(cookie.value, token, 'the session is not the token');
    assert.equal(await page.evaluate(() => document.cookie), '', 'no script reads it');

    // The token went to the inbox once, in the body of the login's POST: in no URL or header.
    const posts = seen.filter((r) => r.body.includes(token));
    assert.deepEqual(
      posts.map((r) => [r.method, new URL(r.url).pathname]),
      [['POST', '/login']],
    );
    assert.equal(new URLSearchParams(posts[0].body).get('token'), token);
    assert.equal(seen[0].url, link, 'the link was opened (puppeteer shows the fragment, which the browser keeps to itself)');
    for (const r of seen) {
      const sent = r.url.split('#')[0]; // what reaches the server: the fragment never does
      assert.ok(!sent.includes(token), `${r.method} ${sent}: the token in a URL`);
      for (const [name, value] of Object.entries(r.headers)) assert.ok(!value.includes(token), `${r.method} ${r.url}: the token in ${name}`);
    }
    // Logged in: the API answers this page, with the API token the login answered, kept for this
    // origin; the cookie alone gets nothing (ADR 069).
    const session = await page.evaluate(async () => {
      const token = localStorage.getItem('cloakpipe_inbox_api_token') ?? '';
      return [(await fetch('/api/session', { headers: { 'X-CSRF-Token': token } })).status, (await fetch('/api/session')).status, token];
    });
    assert.deepEqual(session.slice(0, 2), [200, 403]);
    assert.notEqual(session[2], token, 'the API token is not the login token');
    // Nor is it kept in the history: Back does not lead to it.
    await page.goBack();
    assert.ok(!page.url().includes(token), `Back leads to ${page.url()}`);
    await ctx.close();
    assert.equal(inbox.stderr().split(token).length - 1, 1, 'the token is logged nowhere else');
  } finally {
    await inbox.stop();
  }
});

test('without --listen it serves 127.0.0.1:8932', async () => {
  const s = setup();
  let inbox: RunningInbox | undefined;
  try {
    inbox = await startInbox({ home: s.home, approverKey: s.approverKey, listen: null, printedToken: true });
  } catch (e) {
    // The port is another process's on this machine: the refusal still names the default.
    assert.match((e as Error).message, /cannot listen on 127\.0\.0\.1:8932: EADDRINUSE/);
    return;
  }
  try {
    assert.match(inbox.stderr(), /serving http:\/\/127\.0\.0\.1:8932\//);
    assert.match(inbox.loginLink!, /^http:\/\/127\.0\.0\.1:8932\/login#token=/);
    const login = await fetch('http://127.0.0.1:8932/login');
    assert.equal(login.status, 200);
  } finally {
    await inbox.stop();
  }
});

test('without --ttl an approval is valid 15 minutes from when it is signed', async () => {
  const s = setup();
  const g = await startGate(s);
  const inbox = await startInbox({ home: s.home, approverKey: s.approverKey });
  try {
    assert.match(inbox.stderr(), /valid 15m\)/);
    const refused = await call(g, 'send_email', { to: 'ttl-default@example.com' });
    assert.ok(!refused.ok && refused.reason === 'approval_required');
    const api = await inboxClient(inbox);
    assert.equal((JSON.parse((await api('/api/session')).body) as { ttl_ms: number }).ttl_ms, 900_000);
    const id = (JSON.parse((await api('/api/requests')).body) as { requests: { id: string; arguments: { to: string } }[] }).requests.find(
      (r) => r.arguments.to === 'ttl-default@example.com',
    )!.id;
    const before = Date.now();
    const approved = await api(`/api/requests/${id}/approve`, 'POST');
    assert.equal(approved.status, 200, approved.body);
    const db = new Database(join(s.home, 'operations.db'), { readonly: true });
    let receipt: { issued_at: string; expires_at: string };
    try {
      receipt = JSON.parse((db.prepare('SELECT receipt FROM offered_receipts WHERE fingerprint = ?').get(refused.data.fingerprint) as { receipt: string }).receipt);
    } finally {
      db.close();
    }
    assert.equal(Date.parse(receipt.expires_at) - Date.parse(receipt.issued_at), 15 * 60_000, 'expires 15 min after issue');
    assert.ok(Math.abs(Date.parse(receipt.issued_at) - before) < 10_000, 'issued when approved');
    assert.equal((JSON.parse(approved.body) as { expires_at: string }).expires_at, receipt.expires_at);
    assert.ok((await call(g, 'send_email', { to: 'ttl-default@example.com' })).ok, 'the gate takes it');
  } finally {
    await inbox.stop();
    await g.close();
  }
});
