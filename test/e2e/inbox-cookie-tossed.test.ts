// A web server on another port of 127.0.0.1 sets a cookie of the inbox's name (a cookie knows no
// port) with a longer Path, which the browser then sends first on the inbox's API requests
// (RFC 6265 5.4). The inbox took the first cookie of its name: every API request was 401, and
// each new login set a cookie the browser still sent after the tossed one, so the approver's
// page was locked out for as long as that cookie lived. Real binary, real gate, Debian's
// chromium: the page, logged in, still lists the waiting call and approves it.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser } from 'puppeteer-core';
import { browserSkip, launchBrowser } from '../helpers/browser.js';
import { closeGateWithInbox, openGateWithInbox, type RunningInbox } from '../helpers/inbox-server.js';
import { call, type RunningGate } from '../helpers/recording-gate.js';

const TO = 'tossed-cookie-canary@example.com';
const WAIT_MS = 20_000;
let g: RunningGate;
let inbox: RunningInbox;
let browser: Browser;
let other: Server;

before(async () => {
  if ('skip' in browserSkip) return;
  ({ g, inbox } = await openGateWithInbox());
  browser = await launchBrowser();
  // Another local web app the approver visits: it sets a cookie for its host, 127.0.0.1.
  other = createServer((_req, res) => res.writeHead(200, { 'Set-Cookie': 'cloakpipe_inbox=set-by-another-port; Path=/api; SameSite=Lax', 'Content-Type': 'text/html' }).end('<p>another app</p>'));
  await new Promise<void>((r) => other.listen(0, '127.0.0.1', r));
});
after(async () => {
  await browser?.close();
  other?.close();
  await closeGateWithInbox(g, inbox);
});

test("a cookie of the inbox's name set by another port does not lock the approver's page out", browserSkip, async () => {
  const refused = await call(g, 'send_email', { to: TO, body: 'hello' });
  assert.ok(!refused.ok && refused.reason === 'approval_required');
  const page = await (await browser.createBrowserContext()).newPage();
  await page.goto(`${inbox.url}/`);
  await page.type('#token', inbox.token);
  await Promise.all([page.waitForNavigation(), page.click('button[type=submit]')]);
  await page.waitForSelector('#requests button', { timeout: WAIT_MS });

  await page.goto(`http://127.0.0.1:${(other.address() as AddressInfo).port}/`);
  const cookies = await page.cookies(`${inbox.url}/api/requests`);
  assert.deepEqual(cookies.map((c) => [c.name, c.path]).sort(), [['cloakpipe_inbox', '/'], ['cloakpipe_inbox', '/api']], 'the browser holds both, for the inbox too');

  await page.goto(`${inbox.url}/`);
  assert.equal(new URL(page.url()).pathname, '/', 'still logged in');
  await page.waitForSelector('#requests button', { timeout: WAIT_MS });
  assert.equal(new URL(page.url()).pathname, '/', 'the API answered the page: no new login asked');
  await page.click('#requests button');
  await page.waitForSelector('#approve', { visible: true, timeout: WAIT_MS });
  await page.click('#approve');
  await page.waitForFunction(() => document.getElementById('detail')!.textContent!.includes('Approved'), { timeout: WAIT_MS });
  const ran = await call(g, 'send_email', { to: TO, body: 'hello' });
  assert.ok(ran.ok, JSON.stringify(ran));
});
