// Requests for long calls in the inbox. A call may be megabytes (the frame limit) and the gate
// keeps up to 200 open requests (ADR 058); the inbox read every one whole each second and sent
// them all in every listing: 20 calls of 3.5 MB kept an idle inbox at 16 % CPU and one listing at
// 528 MB. Now the poll reads ids only, the list leaves out the arguments of a call longer than
// 64 KiB (its size instead), and the page reads such a call whole when it is opened, before it
// offers Approve. Through the real binaries, over raw HTTP and in Debian's chromium.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser } from 'puppeteer-core';
import { browserSkip, launchBrowser } from '../helpers/browser.js';
import { closeGateWithInbox, inboxClient, openGateWithInbox, type RunningInbox } from '../helpers/inbox-server.js';
import { call, records, type RunningGate, type Setup } from '../helpers/recording-gate.js';

interface Listed {
  requests: { id: string; arguments: { to: string } | null; call_bytes: number }[];
}

// `to` has no length rule in the manifest: as long as the frame allows.
const long = (tag: string) => ({ to: `${tag}-${'x'.repeat(300_000)}@example.com` });

let s: Setup;
let g: RunningGate;
let inbox: RunningInbox;
let browser: Browser | undefined;
before(async () => void ({ s, g, inbox } = await openGateWithInbox()));
after(async () => {
  await browser?.close();
  await closeGateWithInbox(g, inbox);
});

test('a long call is listed by its size, read whole on its own, approved, and runs once', async () => {
  const small = { to: 'small@example.com' };
  for (const args of [small, long('api-a'), long('api-b')]) {
    const r = await call(g, 'send_email', args);
    assert.ok(!r.ok && r.reason === 'approval_required', JSON.stringify(r).slice(0, 200));
  }
  const api = await inboxClient(inbox);
  const listing = await api('/api/requests');
  assert.equal(listing.status, 200);
  assert.ok(listing.body.length < 20_000, `the listing carries no long call (${listing.body.length} bytes)`);
  const listed = (JSON.parse(listing.body) as Listed).requests;
  assert.equal(listed.length, 3);
  const shown = listed.find((r) => r.arguments !== null)!;
  assert.deepEqual(shown.arguments, small, 'a short call is listed with its arguments');
  const left = listed.filter((r) => r.arguments === null);
  assert.equal(left.length, 2);
  for (const r of left) assert.ok(r.call_bytes > 300_000, `its size: ${r.call_bytes}`);

  // Opened, it is whole: the call exactly as it would be forwarded.
  const whole = await Promise.all(left.map(async (r) => JSON.parse((await api(`/api/requests/${r.id}`)).body) as Listed['requests'][number]));
  const a = whole.find((r) => r.arguments!.to.startsWith('api-a-'))!;
  assert.deepEqual(a.arguments, long('api-a'));
  assert.equal(a.call_bytes, left.find((r) => r.id === a.id)!.call_bytes);

  assert.equal((await api(`/api/requests/${a.id}/approve`, 'POST')).status, 200);
  const runs = [await call(g, 'send_email', long('api-a')), await call(g, 'send_email', long('api-a'))];
  assert.deepEqual(runs.map((r) => r.ok), [true, false]);
  assert.equal(records(s).filter((r) => String(r.arguments.to).startsWith('api-a-')).length, 1, 'the approved long call ran once');
});

test('the page lists a long call by its size and shows every argument before it offers Approve', browserSkip, async () => {
  const args = long('page');
  const r = await call(g, 'send_email', args);
  assert.ok(!r.ok && r.reason === 'approval_required');
  // Its id, from the API: the list shows no argument of a long call to tell it by.
  const api = await inboxClient(inbox);
  const ids = (JSON.parse((await api('/api/requests')).body) as Listed).requests.filter((x) => x.arguments === null).map((x) => x.id);
  const whole = await Promise.all(ids.map(async (id) => JSON.parse((await api(`/api/requests/${id}`)).body) as Listed['requests'][number]));
  const id = whole.find((x) => x.arguments!.to === args.to)!.id;
  browser = await launchBrowser();
  const page = await (await browser.createBrowserContext()).newPage();
  await page.goto(`${inbox.url}/login`);
  await page.type('#token', inbox.token);
  await Promise.all([page.waitForNavigation(), page.click('button[type=submit]')]);
  await page.waitForSelector('#requests button');
  const text = await page.$eval(`#requests button[data-id="${id}"]`, (b) => b.textContent ?? '');
  assert.match(text, /arguments of 29\d KB: open to see them/);
  await page.click(`#requests button[data-id="${id}"]`);
  await page.waitForSelector('#detail table.args');
  const to = await page.$eval('#detail table.args tbody tr pre', (e) => e.textContent ?? '');
  assert.equal(to, args.to, 'the whole argument, as it would be forwarded');
  assert.ok(await page.$('#approve'));
  await page.click('#approve');
  await page.waitForSelector('#detail .result.ok');
  const ran = await call(g, 'send_email', args);
  assert.ok(ran.ok, JSON.stringify(ran).slice(0, 200));
});
