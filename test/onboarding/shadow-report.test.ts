// `cloakpipe shadow report`: a real gate in shadow mode (mcp-proxy --server, server-memory, the
// SDK client) forwards calls enforce would refuse; the report counts them by tool and reason,
// points at the drafted manifest's lines for the tool, and never shows an argument value.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { CLI, MEMORY, cloakpipe, makeHome, tempDir } from '../helpers/cli.js';

test('shadow report: would_refuse decisions by tool and reason, with the manifest lines to change', async () => {
  const home = makeHome();
  const dir = join(home, 'servers', 'mem');
  mkdirSync(dir, { recursive: true });
  const d = cloakpipe(['manifest', 'draft', '--out', join(dir, 'manifest.yaml'), '--policy-out', join(dir, 'policy.cedar'), '--', process.execPath, MEMORY], { timeout: 60_000 });
  assert.equal(d.status, 0, d.stderr);
  const store = join(tempDir('cloakpipe-shadow-'), 'memory.jsonl');
  const client = new Client({ name: 'host', version: '1' });
  await client.connect(
    new StdioClientTransport({
      command: process.execPath,
      args: [CLI, 'mcp-proxy', '--home', home, '--server', 'mem', '--mode', 'shadow', '--', process.execPath, MEMORY],
      env: { MEMORY_FILE_PATH: store },
      stderr: 'ignore',
    }),
  );
  const canary = 'canary-value-5c1e';
  try {
    await client.callTool({ name: 'read_graph', arguments: {} }); // allowed: not in the report
    await client.callTool({ name: 'search_nodes', arguments: { query: canary, [canary]: 1 } });
    await client.callTool({ name: 'search_nodes', arguments: { query: canary, [canary]: 2 } });
    await client.callTool({ name: 'search_nodes', arguments: { query: 7 } }).catch(() => undefined); // the server may refuse it; shadow forwarded it
    await client.callTool({ name: `tool-${canary}`, arguments: {} }).catch(() => undefined);
  } finally {
    await client.close();
  }
  const r = cloakpipe(['shadow', 'report', '--home', home, '--json']);
  assert.equal(r.status, 0, r.stderr);
  const groups = r.stdout.trim().split('\n').map((l) => JSON.parse(l));
  const manifestPath = join(dir, 'manifest.yaml');
  const lines = readFileSync(manifestPath, 'utf8').split('\n');
  const at = lines.indexOf('  search_nodes:') + 1;
  assert.deepEqual(
    groups.map((g) => [g.tool, g.reason, g.calls]),
    [
      ['search_nodes', 'undeclared_argument', 2],
      [null, 'undeclared_tool', 1],
      ['search_nodes', 'argument_invalid', 1],
    ],
  );
  const undeclaredArg = groups[0];
  assert.equal(undeclaredArg.manifest, manifestPath);
  assert.equal(undeclaredArg.lines[0], at, 'points at the tool in the manifest');
  assert.match(lines[undeclaredArg.lines[1] - 1], /^ {6}query: /, 'to the end of its block');
  assert.match(groups[1].tool_digest, /^sha256:[0-9a-f]{64}$/);
  assert.equal(groups[1].lines[0], lines.findIndex((l) => l.startsWith('tools:')) + 1);
  const text = cloakpipe(['shadow', 'report', '--home', home]);
  assert.equal(text.status, 0);
  assert.match(text.stdout, /^4 call\(s\) enforce would have refused:/);
  assert.ok(text.stdout.includes(`${manifestPath}:${at}-${undeclaredArg.lines[1]}`), text.stdout);
  for (const out of [r.stdout, text.stdout]) assert.ok(!out.includes(canary), 'no argument value or model-chosen name in the report');
  // --since: a window with nothing in it.
  const none = cloakpipe(['shadow', 'report', '--home', home, '--since', '1ms']);
  assert.match(none.stdout, /no call would have been refused/);
});
