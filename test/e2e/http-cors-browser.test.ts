// The HTTP door from a real browser (Debian's chromium through puppeteer-core): a page served
// from an --allowed-origin (a local server on another port) runs fetch() against the gate the
// way the SDK client does — initialize with a bearer token, read Mcp-Session-Id, call tools over
// SSE, read WWW-Authenticate on a 401, open the GET stream, DELETE — every request after the
// browser's own preflight. A page on another origin cannot: its fetch fails and opens nothing.
// The upstream is the real server-memory, one process per session.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { join } from 'node:path';
import type { Browser, Page } from 'puppeteer-core';
import { MEMORY, makeHome, writeFiles, tempDir, cloakpipe, tokenFile } from '../helpers/cli.js';
import { canary } from '../helpers/capture.js';
import { browserSkip, launchBrowser } from '../helpers/browser.js';
import { listenLocal } from '../helpers/local-http.js';
import { startHttpGate, type HttpGate } from '../helpers/http-gate.js';

const TOKEN = 'tok-browser-0123456789abcdef';
const MANIFEST = `version: 1
release: http-cors-browser@1
tools:
  create_entities:
    effect: write
    arguments:
      entities: { type: array, max_items: 5, required: true, items: { type: object } }
  read_graph: { effect: read, arguments: {} }
`;
const OBSERVATION = canary('cors-browser');

let browser: Browser;
let allowed: { url: string; close(): Promise<void> };
let other: { url: string; close(): Promise<void> };
let g: HttpGate;
let home: string;

/** A page server: one empty HTML page, so the page has that server's origin. */
const pageServer = () => listenLocal(createServer((_req, res) => res.writeHead(200, { 'Content-Type': 'text/html' }).end('<!doctype html><title>page</title>')));

before(async () => {
  if ('skip' in browserSkip) return;
  allowed = await pageServer();
  other = await pageServer();
  const files: Record<string, string> = { ...writeFiles({ 'm.yaml': MANIFEST, 'p.cedar': 'permit (principal, action, resource);\n' }), tokens: tokenFile(`${TOKEN} page-agent\n`) };
  home = makeHome();
  g = await startHttpGate({
    home,
    manifest: files['m.yaml'],
    policy: files['p.cedar'],
    flags: ['--auth-token-file', files.tokens, '--allowed-origin', allowed.url],
    upstream: [process.execPath, MEMORY],
    env: { MEMORY_FILE_PATH: join(tempDir(), 'memory.jsonl') },
  });
  browser = await launchBrowser();
});
after(async () => {
  await browser?.close();
  await g?.stop();
  await allowed?.close();
  await other?.close();
});

async function pageOn(origin: string): Promise<Page> {
  const page = await (await browser.createBrowserContext()).newPage();
  page.setDefaultTimeout(20_000);
  await page.goto(`${origin}/`);
  return page;
}

interface Run {
  unauthorized: { status: number; www: string | null };
  init: { status: number; sid: string | null; body: string };
  initialized: number;
  stream: { status: number; type: string | null };
  created: string;
  graph: string;
  deleted: number;
  afterDelete: number;
}

/** What the SDK client does, by hand, from inside the page; every fetch bounded in time. */
function mcpFromPage(page: Page, url: string, token: string, observation: string): Promise<Run> {
  return page.evaluate(
    async (url, token, observation) => {
      const within = () => AbortSignal.timeout(15_000);
      const json = { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' };
      const auth = { ...json, Authorization: `Bearer ${token}` };
      const init = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'page', version: '1' } } };
      const u = await fetch(url, { method: 'POST', headers: json, body: JSON.stringify(init), signal: within() });
      await u.text();
      const r = await fetch(url, { method: 'POST', headers: auth, body: JSON.stringify(init), signal: within() });
      const sid = r.headers.get('mcp-session-id');
      const run = {
        unauthorized: { status: u.status, www: u.headers.get('www-authenticate') },
        init: { status: r.status, sid, body: await r.text() },
      } as Record<string, unknown>;
      const session = { ...auth, 'mcp-session-id': sid ?? '', 'mcp-protocol-version': '2025-06-18' };
      const n = await fetch(url, { method: 'POST', headers: session, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }), signal: within() });
      run.initialized = n.status;
      const stop = new AbortController();
      const s = await fetch(url, { method: 'GET', headers: { ...session, Accept: 'text/event-stream' }, signal: AbortSignal.any([stop.signal, within()]) });
      run.stream = { status: s.status, type: s.headers.get('content-type') };
      stop.abort();
      const call = async (id: number, name: string, args: unknown) => {
        const c = await fetch(url, { method: 'POST', headers: session, body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } }), signal: within() });
        return c.text();
      };
      run.created = await call(2, 'create_entities', { entities: [{ name: 'Ada', entityType: 'person', observations: [observation] }] });
      run.graph = await call(3, 'read_graph', {});
      run.deleted = (await fetch(url, { method: 'DELETE', headers: session, signal: within() })).status;
      run.afterDelete = (await fetch(url, { method: 'POST', headers: session, body: JSON.stringify({ jsonrpc: '2.0', id: 4, method: 'tools/list' }), signal: within() })).status;
      return run as unknown as Run;
    },
    url,
    token,
    observation,
  );
}

/** The session open entries of the gate's ledger so far. */
const opened = (): any[] =>
  cloakpipe(['ledger', 'show', '--home', home, '--json'])
    .stdout.trim()
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l))
    .filter((e) => e.kind === 'session' && e.action === 'open');

/** The JSON-RPC message of an SSE answer (its last event). */
const lastEvent = (text: string) => JSON.parse(text.split('\n').filter((l) => l.startsWith('data: ')).at(-1)!.slice(6));

test('a page on an allowed origin initializes, reads Mcp-Session-Id, calls tools and ends its session', { ...browserSkip, timeout: 90_000 }, async () => {
  const page = await pageOn(allowed.url);
  const run = await mcpFromPage(page, g.url, TOKEN, OBSERVATION);
  assert.equal(run.unauthorized.status, 401);
  assert.match(run.unauthorized.www ?? '', /^Bearer resource_metadata="http:\/\/127\.0\.0\.1:\d+\/\.well-known\/oauth-protected-resource/, 'the page reads WWW-Authenticate');
  assert.equal(run.init.status, 200);
  assert.match(run.init.sid ?? '', /^[A-Za-z0-9_-]{43}$/, 'the page reads Mcp-Session-Id');
  assert.ok(lastEvent(run.init.body).result.serverInfo, 'the upstream answered the initialize');
  assert.equal(run.initialized, 202);
  assert.deepEqual(run.stream, { status: 200, type: 'text/event-stream' });
  assert.ok(lastEvent(run.created).result, run.created);
  assert.ok(JSON.stringify(lastEvent(run.graph).result).includes(OBSERVATION), 'the call reached the tool and its answer the page');
  assert.equal(run.deleted, 200);
  assert.equal(run.afterDelete, 404);
  // The metadata a browser client reads first, with the header the SDK adds (a preflight).
  const meta = await page.evaluate(async (href) => {
    const r = await fetch(href, { headers: { 'MCP-Protocol-Version': '2025-06-18' }, signal: AbortSignal.timeout(15_000) });
    return (await r.json()) as { resource: string };
  }, new URL('/.well-known/oauth-protected-resource/mcp', g.url).href);
  assert.equal(meta.resource, g.url);
  assert.ok(!g.stderr().includes(OBSERVATION) && !g.stderr().includes(TOKEN), 'no argument value or token in the log');
  assert.deepEqual(opened().map((e) => e.agent), ['page-agent'], "one session, the token's agent");
});

test('a page on another origin cannot call: its fetch fails and opens no session', { ...browserSkip, timeout: 90_000 }, async () => {
  const page = await pageOn(other.url);
  const before = opened().length;
  const result = await page.evaluate(async (url, token) => {
    const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'page', version: '1' } } });
    try {
      const r = await fetch(url, { method: 'POST', headers: { 'Content-Type': 'application/json', Accept: 'application/json', Authorization: `Bearer ${token}` }, body, signal: AbortSignal.timeout(15_000) });
      return `answered ${r.status}`;
    } catch (e) {
      return (e as Error).name;
    }
  }, g.url, TOKEN);
  assert.equal(result, 'TypeError', 'the preflight was refused, so the request was never sent');
  assert.equal(opened().length, before);
});
