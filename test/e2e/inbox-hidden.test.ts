// What the inbox page shows of a call holding characters a browser draws as nothing (inbox.md:
// the call exactly as it would be forwarded), in Debian's chromium: tag characters that spell
// hidden ASCII after an address (U+E0000-E007F), variation selectors, a combining grapheme
// joiner, Hangul fillers, an invisible musical symbol, a zero-width space in the task. Each is
// shown escaped and marked, in the detail and in the list; none reaches the page as itself. And
// values of an argument the manifest gives no type: `5` and `"5"` are two calls, shown as two.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import type { Browser } from 'puppeteer-core';
import { fixtureFiles } from '../helpers/cli.js';
import { browserSkip, launchBrowser } from '../helpers/browser.js';
import { startInbox, type RunningInbox } from '../helpers/inbox-server.js';
import { call, keygen, MANIFEST, startGate, type RunningGate, type Setup } from '../helpers/recording-gate.js';

async function loggedInPage() {
  const page = await (await browser.createBrowserContext()).newPage();
  await page.goto(`${inbox.url}/login`);
  await page.type('#token', inbox.token);
  await Promise.all([page.waitForNavigation(), page.click('button[type=submit]')]);
  await page.waitForSelector('#requests button');
  return page;
}

/** What a browser draws as nothing or that moves other characters (the page's own list, checked here independently). */
const INVISIBLE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Default_Ignorable_Code_Point}]/u;
const TAGS = [...' bcc attacker'].map((c) => String.fromCodePoint(0xe0000 + c.codePointAt(0)!)).join('');
const TASK = 'T-77\u200b';

let g: RunningGate;
let inbox: RunningInbox;
let browser: Browser;
before(async () => {
  if ('skip' in browserSkip) return;
  // body without a type: any JSON value passes the contract.
  const manifest = MANIFEST.replace('body: { type: string, max_len: 4000 }', 'body: {}');
  assert.notEqual(manifest, MANIFEST);
  const f = fixtureFiles('cloakpipe-inbox-hidden-', { manifest, context: { task: { id: TASK } } });
  keygen(join(f.dir, 'approver'));
  const s: Setup = { ...f, approverKey: join(f.dir, 'approver.key'), approverPub: join(f.dir, 'approver.pub') };
  g = await startGate(s);
  inbox = await startInbox({ home: s.home, approverKey: s.approverKey });
  browser = await launchBrowser();
});
after(async () => {
  await browser?.close();
  await inbox?.stop();
  await g?.close();
});

test('characters a browser draws as nothing are shown escaped and marked, in the detail and the list', browserSkip, async () => {
  const args = {
    to: `bob@example.com${TAGS}`,
    body: 'hi\u{fe0f}\u{e0100}\u034f\u3164\u115f there',
    idempotency_key: 'k\u{1d173}',
  };
  const refused = await call(g, 'send_email', args);
  assert.ok(!refused.ok && refused.reason === 'approval_required', JSON.stringify(refused));

  const page = await loggedInPage();
  await page.click('#requests button');
  await page.waitForSelector('#detail table.args');

  const rows = await page.$$eval('#detail table.args tbody tr', (trs) =>
    trs.map((tr) => ({ name: tr.querySelector('th')?.textContent ?? '', value: tr.querySelector('pre')?.textContent ?? '', marked: tr.querySelectorAll('pre .esc').length })),
  );
  const byName = new Map(rows.map((r) => [r.name, r]));
  assert.equal(byName.get('to')?.value, `bob@example.com${[...TAGS].map((c) => `\\u{${c.codePointAt(0)!.toString(16)}}`).join('')}`, 'the hidden tag text is spelled out');
  assert.equal(byName.get('to')?.marked, [...TAGS].length, 'each tag character marked');
  assert.equal(byName.get('body')?.value, 'hi\\ufe0f\\u{e0100}\\u034f\\u3164\\u115f there');
  assert.equal(byName.get('body')?.marked, 5);
  assert.equal(byName.get('idempotency_key')?.value, 'k\\u{1d173}');
  assert.equal(byName.get('idempotency_key')?.marked, 1);

  const detail = await page.$eval('#detail', (e) => e.textContent ?? '');
  const list = await page.$eval('#requests', (e) => e.textContent ?? '');
  for (const [where, text] of [
    ['the detail', detail],
    ['the list', list],
  ])
    assert.doesNotMatch(text, INVISIBLE, `${where} draws nothing invisible as itself`);
  assert.match(detail, /T-77\\u200b/, 'the task, its zero-width space shown');
  assert.match(list, /task T-77\\u200b/, 'the task in the list, its zero-width space shown');
  await page.browserContext().close();
});

test('a value that is not a string says its JSON type on the page: 5 and "5", true and "true", an object and its JSON as a string look different', browserSkip, async () => {
  const bodies: unknown[] = [5, '5', true, 'true', null, 'null', { a: 1 }, JSON.stringify({ a: 1 }, null, 2)];
  for (const body of bodies) {
    const refused = await call(g, 'send_email', { to: 'types@example.com', body });
    assert.ok(!refused.ok && refused.reason === 'approval_required', JSON.stringify(refused));
  }
  const page = await loggedInPage();
  const ids = await page.$$eval('#requests button', (bs) => bs.filter((b) => b.textContent!.includes('types@example.com')).map((b) => b.getAttribute('data-id')!));
  assert.equal(ids.length, bodies.length, 'one request each: different calls');
  const seen = new Map<string, string>();
  for (const id of ids) {
    await page.click(`#requests button[data-id="${id}"]`);
    await page.waitForSelector(`#requests button[data-id="${id}"][aria-current="true"]`);
    const cell = await page.$$eval('#detail table.args tbody tr', (trs) => trs.find((tr) => tr.querySelector('th')?.textContent === 'body')!.querySelector('td')!.textContent ?? '');
    assert.ok(!seen.has(cell), `two different calls show the same body: ${JSON.stringify(cell)}`);
    seen.set(cell, id);
  }
  await page.browserContext().close();
});
