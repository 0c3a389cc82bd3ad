// A remote server behind the gate: @modelcontextprotocol/server-everything in its Streamable
// HTTP mode, reached with `mcp-proxy --upstream-url` (a stdio host) and `http-proxy
// --upstream-url` (an HTTP host), each session compared call by call with the same session
// straight to the server over HTTP.
import { before, after, test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { makeHome, writeFiles, PERMIT_ALL, cloakpipe } from '../helpers/cli.js';
import { startGate, type RunningGate } from '../helpers/gate.js';
import { httpClient, startHttpGate, type HttpGate } from '../helpers/http-gate.js';
import { defineSessionTests, runSession, type Outcome } from '../helpers/session-pair.js';
import { startEverythingHttp, type EverythingHttp } from '../helpers/everything-http.js';
import { MANIFEST, STEPS } from '../helpers/everything-session.js';

let direct: (Outcome | null)[] = [];
let viaStdio: (Outcome | null)[] = [];
let viaHttp: (Outcome | null)[] = [];
let server: EverythingHttp;
let stdioGate: RunningGate | undefined;
let httpGate: HttpGate | undefined;
let httpHost: Client | undefined;
const homes = { stdio: '', http: '' };

before(async () => {
  server = await startEverythingHttp();
  const d = new Client({ name: 'direct', version: '1' });
  await d.connect(new StreamableHTTPClientTransport(new URL(server.url)));
  try {
    direct = await runSession(d, STEPS, false);
  } finally {
    await d.close();
  }
  const f = writeFiles({ 'm.yaml': MANIFEST, 'p.cedar': PERMIT_ALL });
  homes.stdio = makeHome();
  stdioGate = await startGate({ home: homes.stdio, manifest: f['m.yaml'], policy: f['p.cedar'], flags: ['--upstream-url', server.url], upstream: [] });
  viaStdio = await runSession(stdioGate.client, STEPS, true);
  homes.http = makeHome();
  httpGate = await startHttpGate({ home: homes.http, manifest: f['m.yaml'], policy: f['p.cedar'], flags: ['--upstream-url', server.url], upstream: [] });
  httpHost = await httpClient(httpGate.url);
  viaHttp = await runSession(httpHost, STEPS, true);
});

after(async () => {
  await stdioGate?.close();
  await httpHost?.close();
  await httpGate?.stop();
  await server?.stop();
});

defineSessionTests('mcp-proxy --upstream-url everything', STEPS, () => ({ direct, gated: viaStdio }));
defineSessionTests('http-proxy --upstream-url everything', STEPS, () => ({ direct, gated: viaHttp }));

test("--upstream-url: the long-running operation's progress notifications arrive through both doors", () => {
  const k = STEPS.findIndex((s) => s.label === 'trigger-long-running-operation with progress');
  assert.deepEqual([direct[k]?.ok && direct[k].progress, viaStdio[k]?.ok && viaStdio[k].progress, viaHttp[k]?.ok && viaHttp[k].progress], [3, 3, 3]);
});

test('--upstream-url: both gates end with 0 and a ledger that verifies, its refusals those of the manifest', async () => {
  await stdioGate!.close();
  stdioGate = undefined;
  await httpHost!.close();
  httpHost = undefined;
  assert.equal(await httpGate!.stop(), 0, httpGate!.stderr());
  for (const home of [homes.stdio, homes.http]) {
    const v = cloakpipe(['verify', '--home', home]);
    assert.equal(v.status, 0, v.stderr);
    const entries = cloakpipe(['ledger', 'show', '--home', home, '--json']).stdout.trim().split('\n').map((l) => JSON.parse(l));
    const refusals = entries.filter((e) => e.kind === 'decision' && e.outcome === 'refuse');
    assert.deepEqual(refusals.map((e) => e.reason), STEPS.filter((s) => s.refusedBy).map((s) => s.refusedBy));
    assert.equal(entries.at(-1).kind, 'shutdown');
  }
});
