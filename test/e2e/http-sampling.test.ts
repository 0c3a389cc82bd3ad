// Server-to-client requests over SSE through the HTTP door: server-everything's tools that ask
// the host for an LLM completion (sampling/createMessage) and for user input
// (elicitation/create), answered by the official SDK client's handlers. The same session runs
// straight to the server over HTTP and through `http-proxy` (upstream as a stdio process and as
// a URL), and each step must come back the same; the server's requests reach the host and the
// host's answers reach the server, each re-serialized by the gate.
import { before, after, test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CreateMessageRequestSchema, ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { EVERYTHING, makeHome, writeFiles, PERMIT_ALL, cloakpipe } from '../helpers/cli.js';
import { startHttpGate, type HttpGate } from '../helpers/http-gate.js';
import { startEverythingHttp, type EverythingHttp } from '../helpers/everything-http.js';

const MANIFEST = `version: 1
release: everything-sampling@1
tools:
  trigger-sampling-request:
    effect: read
    arguments:
      prompt: { type: string, max_len: 200, required: true }
      maxTokens: { type: integer, minimum: 1, maximum: 1000 }
  trigger-elicitation-request: { effect: read, arguments: {} }
`;
const CANARY = 'CANARY-sampled-answer-3f1a';

interface Seen {
  sampling: unknown[];
  elicitation: unknown[];
  results: unknown[];
}

/** An SDK host that can sample and elicit, its answers fixed; what the server asked is recorded. */
async function host(url: string): Promise<{ client: Client; seen: Seen }> {
  const seen: Seen = { sampling: [], elicitation: [], results: [] };
  const client = new Client({ name: 'sampling-host', version: '1' }, { capabilities: { sampling: {}, elicitation: { form: {} } } });
  client.setRequestHandler(CreateMessageRequestSchema, async (req) => {
    seen.sampling.push(req.params);
    return { role: 'assistant', model: 'test-model', stopReason: 'endTurn', content: { type: 'text', text: `sampled ${CANARY} é😀` } };
  });
  client.setRequestHandler(ElicitRequestSchema, async (req) => {
    seen.elicitation.push(req.params);
    return { action: 'accept', content: { name: 'Ada Lovelace', check: true, integer: 7, number: 2.5, untitledSingleSelectEnum: 'Ross' } };
  });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  return { client, seen };
}

async function session(url: string): Promise<Seen> {
  const { client, seen } = await host(url);
  try {
    seen.results.push(await client.callTool({ name: 'trigger-sampling-request', arguments: { prompt: 'write a haiku', maxTokens: 50 } }));
    seen.results.push(await client.callTool({ name: 'trigger-elicitation-request', arguments: {} }));
    seen.results.push(await client.callTool({ name: 'trigger-sampling-request', arguments: { prompt: 'again' } }));
  } finally {
    await client.close();
  }
  return seen;
}

/** A tool result whose text embeds a JSON document, with that document parsed (key order aside). */
function printedValues(result: unknown): unknown {
  const r = result as { content: { type: string; text?: string }[] };
  return r.content.map((c) => {
    if (c.type !== 'text' || c.text === undefined || !c.text.includes('{')) return c;
    const at = c.text.indexOf('{');
    return { type: c.type, prefix: c.text.slice(0, at), value: JSON.parse(c.text.slice(at)) };
  });
}

let server: EverythingHttp;
let direct: Seen;
const gated: Record<string, Seen> = {};
const gates: HttpGate[] = [];
const homes: string[] = [];

before(async () => {
  server = await startEverythingHttp();
  direct = await session(server.url);
  const f = writeFiles({ 'm.yaml': MANIFEST, 'p.cedar': PERMIT_ALL });
  for (const [name, upstream, flags] of [
    ['stdio upstream', [process.execPath, EVERYTHING, 'stdio'], []],
    ['url upstream', [], ['--upstream-url', server.url]],
  ] as const) {
    const home = makeHome();
    homes.push(home);
    const g = await startHttpGate({ home, manifest: f['m.yaml'], policy: f['p.cedar'], flags: [...flags], upstream: [...upstream] });
    gates.push(g);
    gated[name] = await session(g.url);
  }
});

after(async () => {
  await Promise.allSettled(gates.map((g) => g.stop()));
  await server?.stop();
});

for (const name of ['stdio upstream', 'url upstream']) {
  test(`sampling and elicitation over SSE through http-proxy (${name}): the server asks the host the same, and each tool answers the same`, () => {
    const g = gated[name];
    assert.equal(direct.sampling.length, 2);
    assert.equal(direct.elicitation.length, 1);
    assert.deepStrictEqual(g.sampling, direct.sampling);
    assert.deepStrictEqual(g.elicitation, direct.elicitation);
    // The tools print what the host answered with JSON.stringify; the gate forwards the RFC 8785
    // form (keys sorted), so the same values may print in another key order.
    assert.deepStrictEqual(g.results.map(printedValues), direct.results.map(printedValues));
    assert.ok(JSON.stringify(g.results[0]).includes(CANARY), 'the host\'s sampled answer reached the tool and came back');
    assert.ok(JSON.stringify(g.results[1]).includes('Ada Lovelace'), 'the elicited input reached the tool');
  });
}

test('sampling through the gate: each call allowed and recorded, no sampled text in the ledger or the log; the ledger verifies', async () => {
  for (const g of gates) assert.equal(await g.stop(), 0);
  for (const [i, home] of homes.entries()) {
    const v = cloakpipe(['verify', '--home', home]);
    assert.equal(v.status, 0, v.stderr);
    const shown = cloakpipe(['ledger', 'show', '--home', home, '--json']).stdout;
    const decisions = shown.trim().split('\n').map((l) => JSON.parse(l)).filter((e) => e.kind === 'decision');
    assert.deepEqual(decisions.map((e) => [e.tool, e.outcome]), [['trigger-sampling-request', 'allow'], ['trigger-elicitation-request', 'allow'], ['trigger-sampling-request', 'allow']]);
    for (const secret of [CANARY, 'Ada Lovelace']) {
      assert.ok(!shown.includes(secret));
      assert.ok(!gates[i].stderr().includes(secret));
    }
  }
});
