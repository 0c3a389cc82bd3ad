// POSTs that the HTTP door refuses for their headers, before any relay reads them (ADR 086): a
// wrong Content-Type (415), an Accept it cannot meet (406), an unsupported MCP-Protocol-Version
// (400), no Mcp-Session-Id (400), one that names no live session of the sender's (404). Each may
// carry a call, and none was in the ledger: an agent could try calls there without a trace. Now
// each is recorded `invalid_request` with the body's digest and the token's agent, and answered
// with its id. What comes before the token and origin checks (401, 403) stays unrecorded: anyone
// who reaches the port could fill the ledger. Through the real binary, server-everything behind it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { EVERYTHING, makeHome, writeFiles, PERMIT_ALL, tokenFile } from '../helpers/cli.js';
import { ledgerOfAsync } from '../helpers/gate.js';
import { httpClient, rawSession, startHttpGate } from '../helpers/http-gate.js';

const TOKEN = 'refused-unread-token-0123456789abcdef';

test('POSTs refused for their headers are recorded with their digest and agent; 401 and 403 are not', { timeout: 120_000 }, async () => {
  const f: Record<string, string> = {
    ...writeFiles({
      'm.yaml': 'version: 1\nrelease: unread@1\ntools:\n  echo: { effect: read, arguments: { message: { type: string } } }\n',
      'p.cedar': PERMIT_ALL,
    }),
    tokens: tokenFile(`${TOKEN} agent-unread\n`),
  };
  const home = makeHome();
  const g = await startHttpGate({ home, manifest: f['m.yaml'], policy: f['p.cedar'], flags: ['--auth-token-file', f.tokens], upstream: [process.execPath, EVERYTHING] });
  const auth = { Authorization: `Bearer ${TOKEN}` };
  try {
    const sid = await rawSession(g.url, auth);
    const cases: { name: string; status: number; headers: Record<string, string> }[] = [
      { name: 'text/plain', status: 415, headers: { 'Content-Type': 'text/plain', 'Mcp-Session-Id': sid } },
      { name: 'Accept text/html', status: 406, headers: { Accept: 'text/html', 'Mcp-Session-Id': sid } },
      { name: 'protocol 1999-01-01', status: 400, headers: { 'MCP-Protocol-Version': '1999-01-01', 'Mcp-Session-Id': sid } },
      { name: 'no session', status: 400, headers: {} },
      { name: 'unknown session', status: 404, headers: { 'Mcp-Session-Id': 'no-such-session-0000' } },
    ];
    const digests: string[] = [];
    for (const [n, c] of cases.entries()) {
      const body = JSON.stringify({ jsonrpc: '2.0', id: 700 + n, method: 'tools/call', params: { name: 'echo', arguments: { message: `attempt ${c.name}` } } });
      const r = await fetch(g.url, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', ...auth, ...c.headers },
        body,
        signal: AbortSignal.timeout(20_000),
      });
      assert.equal(r.status, c.status, c.name);
      const answer = (await r.json()) as { id: number; error: { data: { reason: string; entry: number } } };
      assert.equal(answer.id, 700 + n, `${c.name}: the answer names the request`);
      assert.equal(answer.error.data.reason, 'invalid_request', c.name);
      digests.push(`sha256:${createHash('sha256').update(body).digest('hex')}`);
    }
    const ledger = await ledgerOfAsync(home);
    for (const [n, d] of digests.entries()) {
      const [e, ...more] = ledger.filter((e) => e.kind === 'decision' && e.line_digest === d);
      assert.ok(e, `${cases[n].name}: recorded`);
      assert.equal(more.length, 0);
      assert.equal(e.reason, 'invalid_request');
      assert.equal(e.agent, 'agent-unread', `${cases[n].name}: the token's agent`);
    }
    // Before the token and origin checks: answered, never recorded.
    const before = (await ledgerOfAsync(home)).length;
    const stranger = await fetch(g.url, { method: 'POST', headers: { 'Content-Type': 'text/plain', Authorization: 'Bearer wrong' }, body: 'x' });
    assert.equal(stranger.status, 401);
    const page = await fetch(g.url, { method: 'POST', headers: { 'Content-Type': 'application/json', Origin: 'https://evil.example', ...auth }, body: '{}' });
    assert.equal(page.status, 403);
    assert.equal((await ledgerOfAsync(home)).length, before, '401 and 403 add no entry');
    // The session goes on, and an SDK host calls as before.
    const c = await httpClient(g.url, auth);
    const echo = await c.callTool({ name: 'echo', arguments: { message: 'after the refusals' } });
    assert.match((echo.content as { text: string }[])[0].text, /after the refusals/);
    await c.close();
  } finally {
    assert.equal(await g.stop(), 0);
  }
});
