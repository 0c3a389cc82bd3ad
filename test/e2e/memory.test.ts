// The official SDK client → the real gate → @modelcontextprotocol/server-memory: a stateful
// server whose answers show that allowed calls arrived and refused ones did not.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { MEMORY, makeHome, writeFiles, tempDir } from '../helpers/cli.js';
import { startGate } from '../helpers/gate.js';

const MANIFEST = `version: 1
release: memory-test@1
tools:
  create_entities:
    effect: write
    arguments:
      entities:
        type: array
        max_items: 5
        required: true
        items: { type: object }
  read_graph:
    effect: read
    arguments: {}
  search_nodes:
    effect: read
    arguments:
      query: { type: string, pattern: "[A-Za-z ]{1,40}", required: true }
`;

test('allowed writes land, refused ones never reach the server', async () => {
  const f = writeFiles({ 'm.yaml': MANIFEST, 'p.cedar': 'permit (principal, action, resource);' });
  const g = await startGate({
    home: makeHome(),
    manifest: f['m.yaml'],
    policy: f['p.cedar'],
    upstream: [process.execPath, MEMORY],
    env: { MEMORY_FILE_PATH: join(tempDir(), 'memory.jsonl') },
  });
  try {
    const created = await g.client.callTool({
      name: 'create_entities',
      arguments: { entities: [{ name: 'Ada', entityType: 'person', observations: ['wrote the first program'] }] },
    });
    assert.ok(!created.isError);
    const tooMany = Array.from({ length: 6 }, (_, i) => ({ name: `E${i}`, entityType: 'x', observations: [] }));
    await assert.rejects(g.client.callTool({ name: 'create_entities', arguments: { entities: tooMany } }), (e: unknown) => e instanceof McpError && (e.data as any).reason === 'argument_invalid');
    await assert.rejects(g.client.callTool({ name: 'delete_entities', arguments: { entityNames: ['Ada'] } }), (e: unknown) => e instanceof McpError && (e.data as any).reason === 'undeclared_tool');
    await assert.rejects(g.client.callTool({ name: 'search_nodes', arguments: { query: 'Ada; rm -rf /' } }), (e: unknown) => e instanceof McpError && (e.data as any).reason === 'argument_invalid');
    const graph = await g.client.callTool({ name: 'read_graph', arguments: {} });
    const text = JSON.stringify(graph);
    assert.ok(text.includes('Ada'), 'the allowed write reached the server');
    assert.ok(!text.includes('E5'), 'the refused write did not');
    const found = await g.client.callTool({ name: 'search_nodes', arguments: { query: 'Ada' } });
    assert.ok(JSON.stringify(found).includes('first program'));
  } finally {
    await g.close();
  }
});
