// `cloakpipe inbox serve --tls-cert --tls-key`: the approval inbox over HTTPS, with a
// self-signed certificate made by openssl here. Debian's chromium, trusting only that
// certificate (its key's SPKI digest), logs in, sees a call the real gate refused
// approval_required and approves it; the host's identical retry runs once. The session cookie is
// Secure and the page says to keep to HTTPS; a page served in clear cannot change anything;
// plain HTTP to the port gets no page; a client that does not trust the certificate gets nothing;
// half a pair of flags, or a key that is not the certificate's, does not start.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { request } from 'node:https';
import { join } from 'node:path';
import type { Browser } from 'puppeteer-core';
import { cloakpipe, tempDir } from '../helpers/cli.js';
import { browserSkip, launchBrowser } from '../helpers/browser.js';
import { closeGateWithInbox, openGateWithInbox, type RunningInbox } from '../helpers/inbox-server.js';
import { call, ledger, records, type RunningGate, type Setup } from '../helpers/recording-gate.js';

const dir = tempDir('cloakpipe-inbox-tls-');
const cert = join(dir, 'cert.pem');
const key = join(dir, 'key.pem');
const otherKey = join(dir, 'other-key.pem');
const openssl = (...args: string[]) => execFileSync('openssl', args, { stdio: ['ignore', 'pipe', 'ignore'] });
openssl('req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-days', '1', '-subj', '/CN=localhost', '-addext', 'subjectAltName=IP:127.0.0.1,DNS:localhost', '-keyout', key, '-out', cert);
openssl('genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', otherKey);
const CA = readFileSync(cert);
/** base64(SHA-256(SubjectPublicKeyInfo)): what chromium's --ignore-certificate-errors-spki-list trusts, and nothing else. */
const SPKI = execFileSync('sh', ['-c', `openssl x509 -pubkey -noout -in '${cert}' | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64`]).toString().trim();

let s: Setup;
let g: RunningGate;
let inbox: RunningInbox;

before(async () => void ({ s, g, inbox } = await openGateWithInbox(['--tls-cert', cert, '--tls-key', key])));
after(() => closeGateWithInbox(g, inbox));

/** One HTTPS request trusting only the test certificate: status, headers, body. */
function https(path: string, o: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(`${inbox.url}${path}`, { method: o.method ?? 'GET', headers: o.headers ?? {}, ca: CA }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end(o.body);
  });
}

test('the inbox prints and serves an https address; its pages say to keep to HTTPS', async () => {
  assert.match(inbox.url, /^https:\/\/127\.0\.0\.1:\d+$/);
  assert.match(inbox.stderr(), /serving https:\/\/127\.0\.0\.1:\d+\//);
  const login = await https('/login');
  assert.equal(login.status, 200);
  assert.equal(login.headers['strict-transport-security'], 'max-age=31536000');
});

test('login over TLS sets a Secure cookie; a page served in clear, or another site, changes nothing', async () => {
  const host = new URL(inbox.url).host;
  const form = new URLSearchParams({ token: inbox.token }).toString();
  const formHeaders = { 'content-type': 'application/x-www-form-urlencoded' };
  const clear = await https('/login', { method: 'POST', headers: { ...formHeaders, origin: `http://${host}` }, body: form });
  assert.equal(clear.status, 403, 'the same host and port in clear is not this page');
  const evil = await https('/login', { method: 'POST', headers: { ...formHeaders, origin: 'https://evil.example' }, body: form });
  assert.equal(evil.status, 403);
  const ok = await https('/login', { method: 'POST', headers: { ...formHeaders, origin: `https://${host}` }, body: form });
  assert.equal(ok.status, 200);
  const setCookie = String(ok.headers['set-cookie']);
  assert.match(setCookie, /; HttpOnly; SameSite=Strict; .*; Secure$/);
  const cookie = setCookie.split(';')[0];
  const { csrf } = JSON.parse(ok.body) as { csrf: string };
  const session = await https('/api/session', { headers: { cookie, 'x-csrf-token': csrf } });
  assert.equal(session.status, 200);
  const logout = await https('/logout', { method: 'POST', headers: { cookie, 'x-csrf-token': csrf, origin: `http://${host}` } });
  assert.equal(logout.status, 403, 'not even a logout from a page in clear');
});

test('plain HTTP to the port gets no page; a client that does not trust the certificate gets nothing', async () => {
  const clear = await fetch(inbox.url.replace('https:', 'http:') + '/login').catch(() => null);
  assert.ok(clear === null || clear.status >= 400, `status ${clear?.status}`);
  await assert.rejects(fetch(`${inbox.url}/login`), 'the certificate is not trusted by default');
});

test('in chromium trusting only this certificate, a refused call is approved and its identical retry runs once', browserSkip, async () => {
  let browser: Browser | undefined;
  try {
    browser = await launchBrowser([`--ignore-certificate-errors-spki-list=${SPKI}`]);
    const args = { to: 'tls-approve@example.com', body: 'over https' };
    const refused = await call(g, 'send_email', args);
    assert.ok(!refused.ok && refused.reason === 'approval_required');
    const page = await browser.newPage();
    await page.goto(`${inbox.url}/`);
    assert.equal(new URL(page.url()).pathname, '/login');
    await page.type('#token', inbox.token);
    await Promise.all([page.waitForNavigation(), page.click('button[type=submit]')]);
    assert.equal(page.url(), `${inbox.url}/`);
    const [cookie] = await page.cookies();
    assert.ok(cookie.secure && cookie.httpOnly && cookie.sameSite === 'Strict', JSON.stringify(cookie));
    await page.waitForSelector('#requests button[data-id]');
    await page.click('#requests button[data-id]');
    await page.waitForSelector('#approve');
    await page.click('#approve');
    await page.waitForSelector('#detail .result.ok');
    assert.match(await page.$eval('#detail .result', (e) => e.textContent ?? ''), /^Approved send_email: receipt sha256:/);
    const ok = await call(g, 'send_email', args);
    assert.ok(ok.ok, JSON.stringify(ok));
    assert.equal(records(s).filter((r) => r.tool === 'send_email').length, 1, 'the approved call ran once');
    assert.ok(ledger(s).some((e) => e.kind === 'operator' && e.action === 'approve' && e.fingerprint === refused.data.fingerprint));
  } finally {
    await browser?.close();
  }
});

test('half a pair of TLS flags, or a key that is not the certificate\'s, does not start (exit 2)', () => {
  const serve = (...flags: string[]) => cloakpipe(['inbox', 'serve', '--home', s.home, '--approver-key', s.approverKey, '--listen', '127.0.0.1:0', ...flags], { timeout: 10_000 });
  const half = serve('--tls-cert', cert);
  assert.equal(half.status, 2);
  assert.match(half.stderr, /--tls-cert and --tls-key go together/);
  const wrong = serve('--tls-cert', cert, '--tls-key', otherKey);
  assert.equal(wrong.status, 2);
  assert.match(wrong.stderr, /do not load as a PEM certificate and its private key/);
  assert.doesNotMatch(wrong.stderr, /PRIVATE KEY/, 'never the key itself');
});
