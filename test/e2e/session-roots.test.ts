// Server-to-host requests through the gate: @modelcontextprotocol/server-filesystem started
// without directories asks the host for its MCP roots (`roots/list`) and asks again when the
// host says they changed. The host's answers must reach the server through the gate, so the
// session matches the same session straight to the server, call by call.
import { before, after, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ListRootsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { FILESYSTEM, makeHome, writeFiles, tempDir, PERMIT_ALL } from '../helpers/cli.js';
import { gateArgs } from '../helpers/gate.js';
import { defineSessionTests, runSession, type Outcome, type Step } from '../helpers/session-pair.js';

const base = tempDir('cloakpipe-roots-');
const A = join(base, 'a');
const B = join(base, 'b');
for (const [dir, text] of [[A, 'in a\n'], [B, 'in b\n']] as const) {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'file.txt'), text);
}
const esc = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

const MANIFEST = `version: 1
release: roots@1
tools:
  list_allowed_directories: { effect: read, arguments: {} }
  read_text_file: { effect: read, arguments: { path: { type: string, pattern: "${esc(base)}/[ab]/file\\\\.txt", required: true } } }
`;

/** A host that offers MCP roots, which the test can change. */
function rootsHost(name: string): { client: Client; setRoots: (dirs: string[]) => Promise<void>; asked: () => number } {
  let roots: string[] = [A];
  let asked = 0;
  const client = new Client({ name, version: '1' }, { capabilities: { roots: { listChanged: true } } });
  client.setRequestHandler(ListRootsRequestSchema, () => {
    asked++;
    return { roots: roots.map((d) => ({ uri: pathToFileURL(d).href, name: d })) };
  });
  return {
    client,
    setRoots: async (dirs) => {
      roots = dirs;
      await client.sendRootsListChanged();
    },
    asked: () => asked,
  };
}

let host: ReturnType<typeof rootsHost>;

/**
 * The server applies the roots it was given after answering other requests, so ask until the
 * listing names the directory (bounded by tries, never by time).
 */
async function allowedOnce(c: Client, dir: string): Promise<unknown> {
  for (let k = 0; k < 400; k++) {
    const r = await c.callTool({ name: 'list_allowed_directories', arguments: {} });
    if (JSON.stringify(r).includes(dir)) return r;
    await new Promise((res) => setTimeout(res, 25));
  }
  throw new Error(`the server never allowed ${dir}`);
}

const read = (dir: string) => (c: Client) => c.callTool({ name: 'read_text_file', arguments: { path: join(dir, 'file.txt') } });

const STEPS: Step[] = [
  { label: 'the server took root a from the host', run: (c) => allowedOnce(c, A) },
  { label: 'read a/file.txt', run: read(A) },
  { label: 'read b/file.txt (not a root)', run: read(B) },
  {
    label: 'roots change to b: the server asks again',
    run: async (c) => {
      await host.setRoots([B]);
      return allowedOnce(c, B);
    },
  },
  { label: 'read b/file.txt', run: read(B) },
  { label: 'read a/file.txt (no longer a root)', run: read(A) },
  { label: 'the host was asked for roots twice', run: async () => host.asked() },
];

let direct: (Outcome | null)[] = [];
let gated: (Outcome | null)[] = [];
let gatedClient: Client | undefined;

before(async () => {
  host = rootsHost('direct');
  await host.client.connect(new StdioClientTransport({ command: process.execPath, args: [FILESYSTEM], stderr: 'ignore' }));
  try {
    direct = await runSession(host.client, STEPS, false);
  } finally {
    await host.client.close();
  }
  const f = writeFiles({ 'm.yaml': MANIFEST, 'p.cedar': PERMIT_ALL });
  host = rootsHost('gated');
  gatedClient = host.client;
  await host.client.connect(
    new StdioClientTransport({ command: process.execPath, args: gateArgs({ home: makeHome(), manifest: f['m.yaml']!, policy: f['p.cedar']!, upstream: [process.execPath, FILESYSTEM] }), stderr: 'ignore' }),
  );
  gated = await runSession(host.client, STEPS, true);
});

after(async () => {
  await gatedClient?.close();
});

defineSessionTests('roots', STEPS, () => ({ direct, gated }));

test('roots: the direct session really exercised both roots', () => {
  assert.ok(direct.every((o) => o?.ok));
  assert.equal((direct[6] as { value: unknown }).value, 2);
  assert.match(JSON.stringify(direct[2]), /denied|outside|not allowed/i, 'b is refused by the server while it is not a root');
});
