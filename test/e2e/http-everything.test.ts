// The same server-everything session as test/e2e/session-everything.test.ts, but the host speaks
// MCP Streamable HTTP (the official SDK's StreamableHTTPClientTransport) to `cloakpipe
// http-proxy`, compared call by call with the session straight to the server over stdio.
import { before, after, test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { EVERYTHING, makeHome, writeFiles, PERMIT_ALL, cloakpipe } from '../helpers/cli.js';
import { httpClient, startHttpGate, type HttpGate } from '../helpers/http-gate.js';
import { defineSessionTests, runSession, type Outcome } from '../helpers/session-pair.js';

import { directSession, MANIFEST, STEPS } from '../helpers/everything-session.js';

let direct: (Outcome | null)[] = [];
let gated: (Outcome | null)[] = [];
let gate: HttpGate | undefined;
let client: Client | undefined;
let home: string;

before(async () => {
  direct = await directSession();
  const f = writeFiles({ 'm.yaml': MANIFEST, 'p.cedar': PERMIT_ALL });
  home = makeHome();
  gate = await startHttpGate({ home, manifest: f['m.yaml'], policy: f['p.cedar'], upstream: [process.execPath, EVERYTHING, 'stdio'] });
  client = await httpClient(gate.url);
  gated = await runSession(client, STEPS, true);
});

after(async () => {
  await client?.close();
  await gate?.stop();
});

defineSessionTests('http everything', STEPS, () => ({ direct, gated }));

test("http everything: the long-running operation's three progress notifications arrive over SSE", () => {
  const k = STEPS.findIndex((s) => s.label === 'trigger-long-running-operation with progress');
  assert.deepEqual([gated[k]?.ok && gated[k].progress, direct[k]?.ok && direct[k].progress], [3, 3]);
});

test('http everything: SIGTERM ends the gate with 0, a shutdown entry, and a ledger that verifies', async () => {
  await client!.close();
  client = undefined;
  assert.equal(await gate!.stop(), 0, gate!.stderr());
  const v = cloakpipe(['verify', '--home', home]);
  assert.equal(v.status, 0, v.stderr);
  const entries = cloakpipe(['ledger', 'show', '--home', home, '--json']).stdout.trim().split('\n').map((l) => JSON.parse(l));
  assert.equal(entries.at(-1).kind, 'shutdown');
  const refusals = entries.filter((e) => e.kind === 'decision' && e.outcome === 'refuse');
  assert.deepEqual(refusals.map((e) => e.reason), STEPS.filter((s) => s.refusedBy).map((s) => s.refusedBy));
  // Every decision of the session names it (a digest of its id) and its agent.
  const decisions = entries.filter((e) => e.kind === 'decision');
  assert.ok(decisions.length > 10);
  assert.equal(new Set(decisions.map((e) => e.session)).size, 1);
  assert.match(decisions[0].session, /^sha256:/);
  assert.ok(decisions.every((e) => e.agent === 'agent'));
});
