// What a person meets at the inbox's door. A login form over its bound (a file pasted in place of
// the token) is answered with why, not a connection cut mid-body (the page could only say
// "Failed to fetch"). The page has a Log out button: the session ends at the server, and its
// cookie and API token are refused from then on. A page opened at another address than the one
// logged in at (localhost, 127.0.0.1) goes to the login page saying that a login holds per address.
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser } from 'puppeteer-core';
import { browserSkip, launchBrowser } from '../helpers/browser.js';
import { startInbox, type RunningInbox } from '../helpers/inbox-server.js';
import { setup } from '../helpers/recording-gate.js';

let inbox: RunningInbox;
let browser: Browser | undefined;
before(async () => {
  const s = setup();
  inbox = await startInbox({ home: s.home, approverKey: s.approverKey });
});
after(async () => {
  await browser?.close();
  await inbox.stop();
});

test('a login form over 4 KiB is answered 413 saying what the token is, whatever its size', async () => {
  for (const size of [5000, 100_000, 4_000_000]) {
    const r = await fetch(`${inbox.url}/login`, { method: 'POST', body: new URLSearchParams({ token: 'x'.repeat(size) }) });
    assert.equal(r.status, 413, `a form of ${size} bytes`);
    const { error } = (await r.json()) as { error: string };
    assert.match(error, /over 4096 bytes: the login token is one line of 16 to 512 characters/);
  }
  // The inbox goes on: the right token logs in.
  const ok = await fetch(`${inbox.url}/login`, { method: 'POST', body: new URLSearchParams({ token: inbox.token }) });
  assert.equal(ok.status, 200);
});

test('Log out ends the session at the server: the page goes to the login page saying so, and its cookie and token are refused', browserSkip, async () => {
  browser = await launchBrowser();
  const ctx = await browser.createBrowserContext();
  const page = await ctx.newPage();
  await page.goto(`${inbox.url}/`);
  assert.equal(new URL(page.url()).pathname, '/login');
  assert.match(await page.$eval('#why', (e) => e.textContent ?? ''), /127\.0\.0\.1 and localhost are two/);
  await page.type('#token', inbox.token);
  await Promise.all([page.waitForNavigation(), page.click('button[type=submit]')]);
  await page.waitForFunction(() => !document.getElementById('signer')!.textContent!.startsWith('Loading'));
  const cookie = (await page.cookies()).find((c) => c.name === 'cloakpipe_inbox')!;
  const token = await page.evaluate(() => localStorage.getItem('cloakpipe_inbox_api_token'));
  const headers = { cookie: `${cookie.name}=${cookie.value}`, 'x-csrf-token': token! };
  assert.equal((await fetch(`${inbox.url}/api/session`, { headers })).status, 200, 'logged in');
  await Promise.all([page.waitForNavigation(), page.click('#logout')]);
  assert.equal(new URL(page.url()).pathname, '/login');
  await page.waitForFunction(() => !document.getElementById('why')!.hidden);
  assert.match(await page.$eval('#why', (e) => e.textContent ?? ''), /^Logged out/);
  assert.equal(await page.evaluate(() => localStorage.getItem('cloakpipe_inbox_api_token')), null, 'the page forgot its token');
  assert.equal((await fetch(`${inbox.url}/api/session`, { headers })).status, 401, 'the old cookie and token are refused');
  // The inbox's address by its other name: no login there yet, and the page says why.
  const other = await ctx.newPage();
  await other.goto(`${inbox.url.replace('127.0.0.1', 'localhost')}/`);
  assert.equal(new URL(other.url()).pathname, '/login');
  assert.match(await other.$eval('#why', (e) => e.textContent ?? ''), /A login holds for the address it was made at/);
});
