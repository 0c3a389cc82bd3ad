// Operation identity (product.md section 5, ADR 015), through the real binary and real servers:
// without an explicit operation id the fingerprint names a call only while it is unsettled, so
// an identical call after it settled is a new operation and runs; with an explicit id, the id
// names one effect for good and a repeat is answered from the store.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, realpathSync } from 'node:fs';
import { join } from 'node:path';
import { FILESYSTEM, MEMORY, PERMIT_ALL, cloakpipe, helperScript, makeHome, tempDir, writeFiles } from '../helpers/cli.js';
import { startGate, type RunningGate } from '../helpers/gate.js';

const text = (r: unknown) => ((r as { content?: { text?: string }[] }).content ?? []).map((c) => c.text ?? '').join('');

async function gate(manifest: string, upstream: string[], env: Record<string, string> = {}): Promise<{ g: RunningGate; home: string }> {
  const home = makeHome();
  const f = writeFiles({ 'm.yaml': manifest, 'p.cedar': PERMIT_ALL });
  const g = await startGate({ home, manifest: f['m.yaml'], policy: f['p.cedar'], upstream, env: { ...(process.env as Record<string, string>), ...env } });
  return { g, home };
}

function decisions(home: string, tool: string): string[] {
  const r = cloakpipe(['ledger', 'show', '--json', '--home', home]);
  assert.equal(r.status, 0, r.stderr);
  return r.stdout
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l))
    .filter((e) => e.kind === 'decision' && e.tool === tool)
    .map((e) => `${e.outcome}:${e.operation_state}`);
}

test('server-filesystem: writing a.txt as v1, v2, v1 leaves v1', async () => {
  const root = realpathSync(tempDir('cloakpipe-identity-fs-'));
  mkdirSync(join(root, 'project'));
  const dir = join(root, 'project');
  const { g, home } = await gate(
    `version: 1
release: identity-fs@1
tools:
  write_file:
    effect: write
    arguments:
      path: { type: string, max_len: 200, required: true }
      content: { type: string, max_len: 100, required: true }
`,
    [process.execPath, FILESYSTEM, dir],
  );
  try {
    const path = join(dir, 'a.txt');
    for (const content of ['v1', 'v2', 'v1']) {
      await g.client.callTool({ name: 'write_file', arguments: { path, content } });
      assert.equal(readFileSync(path, 'utf8'), content, `after writing ${content}`);
    }
  } finally {
    await g.close();
  }
  // Three allowed writes, each a new operation; none replayed.
  assert.deepEqual(decisions(home, 'write_file'), ['allow:pending', 'allow:pending', 'allow:pending']);
});

test('server-memory: create, delete, create the same entity leaves the entity', async () => {
  const memory = join(tempDir('cloakpipe-identity-mem-'), 'memory.jsonl');
  const { g, home } = await gate(
    `version: 1
release: identity-memory@1
tools:
  create_entities: { effect: write, arguments: { entities: { type: array, max_items: 5, items: { type: object }, required: true } } }
  delete_entities: { effect: write, arguments: { entityNames: { type: array, max_items: 5, items: { type: string, max_len: 40 }, required: true } } }
  read_graph: { effect: read, arguments: {} }
`,
    [process.execPath, MEMORY],
    { MEMORY_FILE_PATH: memory },
  );
  const ada = { name: 'Ada', entityType: 'person', observations: ['wrote the first program'] };
  const names = async () => (JSON.parse(text(await g.client.callTool({ name: 'read_graph', arguments: {} }))).entities as { name: string }[]).map((e) => e.name);
  try {
    await g.client.callTool({ name: 'create_entities', arguments: { entities: [ada] } });
    assert.deepEqual(await names(), ['Ada']);
    await g.client.callTool({ name: 'delete_entities', arguments: { entityNames: ['Ada'] } });
    assert.deepEqual(await names(), []);
    await g.client.callTool({ name: 'create_entities', arguments: { entities: [ada] } });
    assert.deepEqual(await names(), ['Ada'], 'the second create ran: Ada is back');
  } finally {
    await g.close();
  }
  assert.deepEqual(decisions(home, 'create_entities'), ['allow:pending', 'allow:pending']);
});

test('a toggle toggles; with an explicit operation id the repeat is the stored answer', async () => {
  const file = join(tempDir('cloakpipe-identity-toggle-'), 'switch');
  const { g, home } = await gate(
    `version: 1
release: identity-toggle@1
tools:
  toggle: { effect: write, arguments: {} }
`,
    [process.execPath, helperScript('upstream.js')],
    { UPSTREAM_TOOLS: 'toggle', TOGGLE_FILE: file },
  );
  try {
    const toggle = async (meta?: Record<string, unknown>) => text(await g.client.callTool({ name: 'toggle', arguments: {}, ...(meta ? { _meta: meta } : {}) }));
    assert.deepEqual([await toggle(), await toggle(), await toggle()], ['on', 'off', 'on']);
    assert.equal(readFileSync(file, 'utf8'), 'on');
    // An explicit id names one effect for good (unchanged): the second call is replayed.
    assert.equal(await toggle({ 'cloakpipe/operation_id': 'flip-7' }), 'off');
    assert.equal(await toggle({ 'cloakpipe/operation_id': 'flip-7' }), 'off', 'the stored answer');
    assert.equal(readFileSync(file, 'utf8'), 'off', 'the switch moved once for flip-7');
  } finally {
    await g.close();
  }
  assert.deepEqual(decisions(home, 'toggle'), ['allow:pending', 'allow:pending', 'allow:pending', 'allow:pending', 'replay:succeeded']);
});
