// The approval inbox in a real browser (inbox.md): the real gate binary in front of a real MCP
// server, driven by the SDK client as host; `cloakpipe inbox serve` as its own process; Debian's
// chromium through puppeteer-core as the person. A call refused approval_required appears on the
// open page without a reload, shows each argument as text (a <script> canary stays text), and a
// click on Approve lets the host's identical retry through once. Deny, expiry, a missing login,
// a wrong token and a wrong CSRF token are each tried, and the session cookie as a web server on
// another port of 127.0.0.1 gets it from the browser (ADR 069); no argument value reaches a log
// line or the ledger. Screenshots of the list and the detail view are written as test artefacts.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { Browser, Page } from 'puppeteer-core';
import { ROOT } from '../helpers/cli.js';
import { browserSkip, launchBrowser } from '../helpers/browser.js';
import { apiRoutes, inboxClient, startInbox, type RunningInbox } from '../helpers/inbox-server.js';
import { call, ledger, records, setup, startGate, type RunningGate, type Setup } from '../helpers/recording-gate.js';

const SCRIPT_CANARY = '<script>window.__inboxCanary = 1</script><img src=x onerror="window.__inboxCanary = 2">';
const TO_CANARY = 'canary-inbox-7f3a@example.com';
const ARTEFACTS = process.env.CLOAKPIPE_TEST_ARTEFACTS ?? join(ROOT, 'test-artefacts');
const SHOTS = join(ARTEFACTS, 'inbox');

let s: Setup;
let g: RunningGate;
let inbox: RunningInbox;
let browser: Browser;
const outside: string[] = [];

/**
 * Opens a request from the list. The list re-renders whenever what is pending changes, so a
 * click can land on a button just replaced ("Node is detached"): it is tried on the new one.
 */
async function openRequest(p: Page, id: string): Promise<void> {
  for (let i = 0; ; i++) {
    try {
      return await p.click(`#requests button[data-id="${id}"]`);
    } catch (e) {
      if (i >= 5 || !/detached/i.test((e as Error).message)) throw e;
    }
  }
}

before(async () => {
  if ('skip' in browserSkip) return;
  s = setup();
  g = await startGate(s);
  inbox = await startInbox({ home: s.home, approverKey: s.approverKey });
  browser = await launchBrowser();
  mkdirSync(SHOTS, { recursive: true });
});
after(async () => {
  assert.deepEqual(outside, [], 'every request of the page went to the inbox itself');
  await browser?.close();
  await inbox?.stop();
  await g?.close();
});

async function loggedInPage(width = 1100, height = 760): Promise<Page> {
  const ctx = await browser.createBrowserContext();
  const page = await ctx.newPage();
  await page.setViewport({ width, height });
  // Nothing loads from outside the inbox (no CDN, no font, no image elsewhere).
  page.on('request', (r) => {
    if (!r.url().startsWith(`${inbox.url}/`)) outside.push(r.url());
  });
  await page.goto(`${inbox.url}/`);
  assert.equal(new URL(page.url()).pathname, '/login', 'not logged in: the login page');
  await page.type('#token', inbox.token);
  await Promise.all([page.waitForNavigation(), page.click('button[type=submit]')]);
  assert.equal(new URL(page.url()).pathname, '/');
  await page.waitForFunction(() => !document.getElementById('signer')!.textContent!.startsWith('Loading'));
  return page;
}

/** The list's entries as the person sees them. */
const listed = (page: Page) => page.$$eval('#requests button', (bs) => bs.map((b) => ({ id: b.getAttribute('data-id')!, text: b.textContent ?? '' })));

async function waitListed(page: Page, pred: (text: string) => boolean, present = true): Promise<string | null> {
  let id: string | null = null;
  const end = Date.now() + 15_000;
  for (;;) {
    const hit = (await listed(page)).find((e) => pred(e.text));
    if (present ? hit : !hit) {
      id = hit?.id ?? null;
      return id;
    }
    if (Date.now() > end) throw new Error(`timed out waiting for the list to ${present ? 'show' : 'drop'} an entry: ${JSON.stringify(await listed(page))}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The API token the page keeps for its origin (ADR 069). */
const apiToken = (page: Page) => page.evaluate(() => localStorage.getItem('cloakpipe_inbox_api_token') ?? '');

/** A JSON request from inside the page (its cookie), with or without a CSRF token. */
function pageFetch(page: Page, path: string, init: { method?: string; csrf?: string | null } = {}) {
  return page.evaluate(
    async (path, method, csrf) => {
      const headers: Record<string, string> = {};
      if (csrf !== null) headers['X-CSRF-Token'] = csrf;
      const r = await fetch(path, { method, headers });
      return { status: r.status, body: await r.text() };
    },
    path,
    init.method ?? 'GET',
    init.csrf === undefined ? null : init.csrf,
  );
}

test('a refused call appears on the open page, shows its arguments as text, and Approve lets the identical retry through once', browserSkip, async () => {
  const page = await loggedInPage();
  assert.match(await page.$eval('#signer', (e) => e.textContent ?? ''), /approver\.key \(key sha256:/, 'the page says whose key signs');
  const args = { to: TO_CANARY, body: SCRIPT_CANARY, idempotency_key: 'inbox-approve-1' };

  // The page is open before the call: it must appear without a reload.
  const navigations: string[] = [];
  page.on('framenavigated', (f) => navigations.push(f.url()));
  const refused = await call(g, 'send_email', args);
  assert.ok(!refused.ok);
  assert.equal(refused.reason, 'approval_required');
  assert.match(refused.detail, /inbox serve/);
  const id = (await waitListed(page, (t) => t.includes('send_email') && t.includes('task T-77')))!;
  assert.deepEqual(navigations, [], 'listed without a reload');
  const second = await call(g, 'read_note', { text: 'no approval needed' });
  assert.ok(second.ok, 'a read call is not held');
  // Two more waiting, so the list shows its order: newest first.
  for (const to of ['ops-lead@example.com', 'billing@example.com']) assert.equal((await call(g, 'send_email', { to, body: `Quarterly numbers for ${to.split('@')[0]}` })).ok, false);
  await waitListed(page, (t) => t.includes('billing@example.com'));
  const order = (await listed(page)).map((e) => e.text);
  assert.ok(order[0].includes('billing@example.com') && order[1].includes('ops-lead@example.com') && order[2].includes('send_email'), JSON.stringify(order));
  await page.screenshot({ path: join(SHOTS, 'list.png') });

  await openRequest(page, id);
  await page.waitForSelector('#detail table.args');
  const rows = await page.$$eval('#detail table.args tbody tr', (trs) =>
    trs.map((tr) => [tr.querySelector('th')?.textContent ?? '', tr.querySelector('pre')?.textContent ?? '', tr.querySelector('td.rule')?.textContent ?? '']),
  );
  assert.deepEqual(
    rows.map((r) => r.slice(0, 2)),
    [
      ['body', SCRIPT_CANARY],
      ['idempotency_key', 'inbox-approve-1'],
      ['to', TO_CANARY],
    ],
    'each argument exactly as it would be forwarded',
  );
  assert.match(rows[2][2], /required: true/, "each argument's manifest rule");
  const detail = await page.$eval('#detail', (e) => e.textContent ?? '');
  assert.match(detail, /T-77/, 'the task');
  assert.match(detail, /Session label\s*public/, 'the label');
  assert.match(detail, /approvals-e2e@1.*tools\.send_email.*approval: required/s, 'the manifest rule requiring approval');
  assert.match(detail, new RegExp(`fingerprint ${refused.data.fingerprint}`));
  // The <script> canary is text: no element came of it, and it never ran.
  assert.equal(await page.evaluate(() => (window as unknown as { __inboxCanary?: number }).__inboxCanary), undefined, 'the canary never ran');
  assert.equal(await page.$$eval('#detail script, #detail img, #requests script, #requests img', (e) => e.length), 0, 'no element made from an argument');
  await page.screenshot({ path: join(SHOTS, 'detail.png'), fullPage: true });

  // Narrow screen: everything readable without sideways scrolling.
  const narrow = await loggedInPage(390, 844);
  await waitListed(narrow, (t) => t.includes('send_email'));
  await openRequest(narrow, id);
  await narrow.waitForSelector('#detail table.args');
  assert.ok(await narrow.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth), 'no horizontal overflow at 390px');
  await narrow.screenshot({ path: join(SHOTS, 'detail-narrow.png'), fullPage: true });
  await narrow.browserContext().close();

  assert.equal(records(s).filter((r) => r.tool === 'send_email').length, 0, 'nothing ran before the approval');
  await page.click('#approve');
  await page.waitForSelector('#detail .result.ok');
  assert.match(await page.$eval('#detail .result', (e) => e.textContent ?? ''), /^Approved send_email: receipt sha256:/);
  await waitListed(page, (t) => t.includes('inboxCanary'), false);

  const ok = await call(g, 'send_email', args);
  assert.ok(ok.ok, JSON.stringify(ok));
  assert.equal(records(s).filter((r) => r.tool === 'send_email').length, 1, 'the approved call ran once');
  const again = await call(g, 'send_email', { ...args, idempotency_key: 'inbox-approve-2' });
  assert.ok(!again.ok);
  assert.equal(again.reason, 'approval_required', 'another call (another key) needs its own approval');

  // Evidence: the approval is an operator entry; no value anywhere but the store.
  const entries = ledger(s);
  const approved = entries.find((e) => e.kind === 'operator' && e.action === 'approve');
  assert.ok(approved);
  assert.equal(approved.fingerprint, refused.data.fingerprint);
  assert.equal(approved.request_entry, refused.data.entry);
  const allowed = entries.find((e) => e.kind === 'decision' && e.outcome === 'allow' && e.tool === 'send_email');
  assert.equal(allowed?.receipt, approved.receipt, 'the gate used the receipt the inbox signed');
  for (const text of [JSON.stringify(entries), g.stderr(), inbox.stderr()]) {
    assert.ok(!text.includes(TO_CANARY) && !text.includes('__inboxCanary'), 'no argument value in the ledger or a log');
  }
  assert.deepEqual(outside, [], 'the page loaded nothing from outside the inbox');
  await page.browserContext().close();
});

test('the identical retry after Approve succeeds, and a second identical retry is approval_invalid (used)', browserSkip, async () => {
  const page = await loggedInPage();
  const args = { to: 'retry@example.com', body: 'twice?' };
  const refused = await call(g, 'send_email', args);
  assert.ok(!refused.ok && refused.reason === 'approval_required');
  const id = (await waitListed(page, (t) => t.includes('retry@example.com')))!;
  // Keyboard only: focus the list, move to the entry, open it, tab to Approve, press Enter.
  await page.focus('#requests button');
  for (let i = 0; i < 10 && (await page.evaluate(() => (document.activeElement as HTMLElement).dataset.id)) !== id; i++) await page.keyboard.press('ArrowDown');
  await page.keyboard.press('Enter');
  await page.waitForSelector('#approve');
  await page.focus('#approve');
  await page.keyboard.press('Enter');
  await page.waitForSelector('#detail .result.ok');
  const before = records(s).length;
  const ok = await call(g, 'send_email', args);
  assert.ok(ok.ok, JSON.stringify(ok));
  assert.equal(records(s).length, before + 1);
  const used = await call(g, 'send_email', args);
  assert.ok(!used.ok);
  assert.equal(used.reason, 'approval_invalid');
  assert.match(used.detail, /^already_used: /);
  assert.equal(records(s).length, before + 1, 'ran once');
  await page.browserContext().close();
});

test('Deny closes the request with an operator entry; the call never runs', browserSkip, async () => {
  const page = await loggedInPage();
  const args = { to: 'deny@example.com', body: 'please do not' };
  const refused = await call(g, 'send_email', args);
  assert.ok(!refused.ok && refused.reason === 'approval_required');
  const id = (await waitListed(page, (t) => t.includes('deny@example.com')))!;
  await openRequest(page, id);
  await page.waitForSelector('#deny');
  await page.click('#deny');
  await page.waitForSelector('#detail .result.ok');
  assert.match(await page.$eval('#detail .result', (e) => e.textContent ?? ''), /^Denied send_email/);
  await waitListed(page, (t) => t.includes('deny@example.com'), false);
  // Final: deciding it again is refused.
  const csrf = await apiToken(page);
  assert.equal((await pageFetch(page, `/api/requests/${id}/approve`, { method: 'POST', csrf })).status, 410);
  const denied = ledger(s).find((e) => e.kind === 'operator' && e.action === 'deny');
  assert.ok(denied);
  assert.equal(denied.fingerprint, refused.data.fingerprint);
  assert.match(String(denied.args_digest), /^sha256:/);
  const retry = await call(g, 'send_email', args);
  assert.ok(!retry.ok);
  assert.equal(retry.reason, 'approval_required', 'no receipt came of a denial');
  assert.ok(!records(s).some((r) => r.arguments.to === 'deny@example.com'));
  await page.browserContext().close();
});

test('a request expires: it leaves the page by itself and can no longer be approved; an approval used after --ttl is refused', browserSkip, async () => {
  const page = await loggedInPage();
  const short = await startGate(s, { flags: ['--request-ttl', '1500ms'] });
  try {
    const args = { to: 'expiring@example.com' };
    const refused = await call(short, 'send_email', args);
    assert.ok(!refused.ok && refused.reason === 'approval_required');
    const id = (await waitListed(page, (t) => t.includes('expiring@example.com')))!;
    await waitListed(page, (t) => t.includes('expiring@example.com'), false);
    const csrf = await apiToken(page);
    const late = await pageFetch(page, `/api/requests/${id}/approve`, { method: 'POST', csrf });
    assert.equal(late.status, 410, late.body);
    const retry = await call(short, 'send_email', args);
    assert.ok(!retry.ok);
    assert.equal(retry.reason, 'approval_required', 'nothing was approved');
  } finally {
    await short.close();
  }
  // An approval signed for 1s, used too late: refused (approval_invalid while the expired receipt
  // waits; approval_required, a new request, once the inbox pruned it); the tool never runs.
  const brief = await startInbox({ home: s.home, approverKey: s.approverKey, flags: ['--ttl', '1s'] });
  try {
    const args = { to: 'late@example.com' };
    assert.equal((await call(g, 'send_email', args)).ok, false);
    const res = await fetchAs(brief, '/api/requests');
    const r = (JSON.parse(res.body) as { requests: { id: string; arguments: { to: string } }[] }).requests.find((x) => x.arguments.to === 'late@example.com')!;
    const ok = await fetchAs(brief, `/api/requests/${r.id}/approve`, 'POST');
    assert.equal(ok.status, 200, ok.body);
    await new Promise((r) => setTimeout(r, 1300));
    const expired = await call(g, 'send_email', args);
    assert.ok(!expired.ok);
    assert.ok(['approval_invalid', 'approval_required'].includes(expired.reason), expired.reason);
    if (expired.reason === 'approval_invalid') assert.match(expired.detail, /^expired: /);
    assert.ok(!records(s).some((x) => x.arguments.to === 'late@example.com'), 'the tool never ran');
  } finally {
    await brief.stop();
  }
  await page.browserContext().close();
});

async function fetchAs(i: RunningInbox, path: string, method = 'GET'): Promise<{ status: number; body: string }> {
  return (await inboxClient(i))(path, method);
}

test('without a login nothing is shown or decided; a wrong token is refused; the cookie is HttpOnly and SameSite=Strict', browserSkip, async () => {
  const args = { to: 'nologin@example.com' };
  assert.equal((await call(g, 'send_email', args)).ok, false);
  const ctx = await browser.createBrowserContext();
  const page = await ctx.newPage();
  await page.goto(`${inbox.url}/`);
  assert.equal(new URL(page.url()).pathname, '/login');
  assert.ok(!(await page.content()).includes('nologin@example.com'));
  const api = await pageFetch(page, '/api/requests');
  assert.equal(api.status, 401);
  assert.ok(!api.body.includes('nologin'));
  const pending = JSON.parse((await fetchAs(inbox, '/api/requests')).body) as { requests: { id: string; arguments: { to: string } }[] };
  const id = pending.requests.find((r) => r.arguments.to === 'nologin@example.com')!.id;
  assert.equal((await pageFetch(page, `/api/requests/${id}/approve`, { method: 'POST', csrf: 'x' })).status, 401);
  // A wrong token.
  await page.type('#token', 'not-the-token-at-all-0123456789');
  await page.click('button[type=submit]');
  await page.waitForSelector('#error:not([hidden])');
  assert.match(await page.$eval('#error', (e) => e.textContent ?? ''), /not the inbox's login token/);
  assert.equal((await page.cookies()).length, 0);
  assert.equal(await apiToken(page), '', 'no API token kept');
  // The right one: the cookie cannot be read by scripts nor sent by another site.
  await page.$eval('#token', (e) => ((e as HTMLInputElement).value = ''));
  await page.type('#token', inbox.token);
  await Promise.all([page.waitForNavigation(), page.click('button[type=submit]')]);
  const [cookie] = await page.cookies();
  assert.equal(cookie.httpOnly, true);
  assert.equal(cookie.sameSite, 'Strict');
  assert.equal(await page.evaluate(() => document.cookie), '');
  await waitListed(page, (t) => t.includes('nologin@example.com'));
  await ctx.close();
  const still = JSON.parse((await fetchAs(inbox, '/api/requests')).body) as { requests: { id: string }[] };
  assert.ok(still.requests.some((r) => r.id === id), 'still pending');
});

test('a wrong or missing CSRF token, another origin or another Host name decides nothing', browserSkip, async () => {
  const page = await loggedInPage();
  const args = { to: 'csrf@example.com' };
  assert.equal((await call(g, 'send_email', args)).ok, false);
  const id = (await waitListed(page, (t) => t.includes('csrf@example.com')))!;
  for (const csrf of [null, '', 'wrong-token']) {
    const r = await pageFetch(page, `/api/requests/${id}/approve`, { method: 'POST', csrf });
    assert.equal(r.status, 403, `CSRF ${JSON.stringify(csrf)}`);
    assert.match(r.body, /CSRF/);
  }
  const cookie = (await page.cookies()).map((c) => `${c.name}=${c.value}`).join('; ');
  const csrf = await apiToken(page);
  const port = Number(new URL(inbox.url).port);
  const raw = (headers: Record<string, string>) =>
    new Promise<number>((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port, method: 'POST', path: `/api/requests/${id}/approve`, headers: { cookie, 'x-csrf-token': csrf, ...headers } }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
      req.end();
    });
  assert.equal(await raw({ origin: 'http://evil.example' }), 403, 'another origin');
  assert.equal(await raw({ 'sec-fetch-site': 'cross-site' }), 403, 'another site');
  assert.equal(await raw({ host: `evil.example:${port}` }), 421, 'a rebound DNS name');
  const still = await pageFetch(page, `/api/requests/${id}`, { csrf });
  assert.equal(still.status, 200, 'still pending');
  const retry = await call(g, 'send_email', args);
  assert.equal(retry.ok ? 'ok' : retry.reason, 'approval_required', 'no receipt was signed');
  await page.browserContext().close();
});

/** One request as curl would send it, with `cookie` alone: no Origin, no Fetch Metadata, no API token. */
function replay(method: string, path: string, cookie: string): Promise<{ status: number; body: string }> {
  const port = Number(new URL(inbox.url).port);
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method, path, headers: { cookie } }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode!, body }));
    });
    req.setTimeout(5000, () => req.destroy(new Error(`${method} ${path}: no answer in 5 s`)));
    req.on('error', reject);
    req.end();
  });
}

test('a web server on another port of 127.0.0.1 gets the session cookie from the browser and still reads and decides nothing; the page still does', browserSkip, async () => {
  const page = await loggedInPage();
  const args = { to: 'other-port@example.com', body: 'customer data' };
  const refused = await call(g, 'send_email', args);
  assert.ok(!refused.ok && refused.reason === 'approval_required');
  const id = (await waitListed(page, (t) => t.includes('other-port@example.com')))!;

  // A dev server, as an agent might write and start one, visited in the approver's browser.
  const cookies: string[] = [];
  const dev = createServer((req, res) => {
    cookies.push(req.headers.cookie ?? '');
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end('<p>a dev server</p>');
  });
  await new Promise<void>((resolve) => dev.listen(0, '127.0.0.1', resolve));
  try {
    const visit = await page.browserContext().newPage();
    await visit.goto(`http://127.0.0.1:${(dev.address() as AddressInfo).port}/`);
    await visit.close();
    const stolen = cookies.flatMap((c) => c.split(';').map((p) => p.trim())).find((p) => p.startsWith('cloakpipe_inbox='));
    assert.ok(stolen, `the browser sends the inbox's cookie to another port of its host (RFC 6265): ${JSON.stringify(cookies)}`);

    for (const [method, path] of apiRoutes(id)) {
      const r = await replay(method, path, stolen);
      assert.equal(r.status, 403, `${method} ${path} with the stolen cookie: ${r.body}`);
      assert.ok(!r.body.includes('other-port@example.com') && !r.body.includes('"csrf"'), `${method} ${path}: ${r.body}`);
    }
    assert.ok(!ledger(s).some((e) => e.kind === 'operator' && e.fingerprint === refused.data.fingerprint), 'nothing decided');
    const retry = await call(g, 'send_email', args);
    assert.equal(retry.ok ? 'ran' : retry.reason, 'approval_required', 'nothing signed');
  } finally {
    dev.close();
  }

  // A second tab of this browser needs no new login (the token is kept for the origin), and the
  // first approves as before.
  // Its API requests, the event stream too (read with fetch), each carry the token.
  const second = await page.browserContext().newPage();
  const sent: { path: string; token: boolean }[] = [];
  const ended: string[] = [];
  second.on('request', (r) => {
    if (new URL(r.url()).pathname.startsWith('/api/')) sent.push({ path: new URL(r.url()).pathname, token: !!r.headers()['x-csrf-token'] });
  });
  second.on('requestfinished', (r) => void (r.url().endsWith('/api/events') && ended.push('finished')));
  second.on('requestfailed', (r) => void (r.url().endsWith('/api/events') && ended.push('failed')));
  await second.goto(`${inbox.url}/`);
  await waitListed(second, (t) => t.includes('other-port@example.com'));
  await new Promise((r) => setTimeout(r, 500));
  assert.equal(new URL(second.url()).pathname, '/', 'no login asked for');
  assert.ok(sent.some((r) => r.path === '/api/events') && sent.every((r) => r.token), JSON.stringify(sent));
  assert.deepEqual(ended, [], 'the event stream stays open');
  await second.close();
  await openRequest(page, id);
  await page.waitForSelector('#approve');
  await page.click('#approve');
  await page.waitForSelector('#detail .result.ok');
  const ok = await call(g, 'send_email', args);
  assert.ok(ok.ok, JSON.stringify(ok));
  assert.equal(records(s).filter((r) => r.arguments.to === 'other-port@example.com').length, 1, 'ran once, after the page approved it');

  // Without the token (storage cleared), the cookie is not enough for the page either: it says why.
  await page.evaluate(() => localStorage.clear());
  await Promise.all([page.waitForNavigation(), page.reload()]);
  await page.waitForSelector('#why:not([hidden])');
  assert.equal(new URL(page.url()).pathname, '/login');
  assert.match(await page.$eval('#why', (e) => e.textContent ?? ''), /no API token for this address/);
  await page.browserContext().close();
});
