// `cloakpipe manifest draft`: a manifest and policy drawn from a real server's tools/list that
// load, pass `policy check`, and let the server's read tools work in enforce mode unchanged
// (server-everything, server-filesystem, server-memory: same answers as straight to the
// server); and a paged server whose schemas hold what v1 cannot say, every keyword named.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { EVERYTHING, FILESYSTEM, MEMORY, cloakpipe, helperScript, makeHome, tempDir } from '../helpers/cli.js';
import { startGate } from '../helpers/gate.js';
import { draftFromTools } from '../../src/onboarding/draft.js';

function draft(server: string[], extra: string[] = []) {
  const dir = tempDir('cloakpipe-draft-');
  const out = join(dir, 'manifest.yaml');
  const r = cloakpipe(['manifest', 'draft', '--out', out, ...extra, '--', ...server], { timeout: 60_000 });
  assert.equal(r.status, 0, r.stderr);
  const manifest = readFileSync(out, 'utf8');
  const policy = readFileSync(join(dir, 'manifest.cedar'), 'utf8');
  const check = cloakpipe(['policy', 'check', '--manifest', out, '--policy', join(dir, 'manifest.cedar')]);
  assert.equal(check.status, 0, `policy check: ${check.stdout}${check.stderr}`);
  return { dir, out, policyPath: join(dir, 'manifest.cedar'), manifest, policy, doc: parseYaml(manifest) as { release: string; tools: Record<string, any> } };
}

async function sameAnswers(server: string[], d: ReturnType<typeof draft>, calls: [string, Record<string, unknown>][]) {
  const gated = await startGate({ home: makeHome(), manifest: d.out, policy: d.policyPath, upstream: server, flags: ['--mode', 'enforce'] });
  const direct = new Client({ name: 'direct', version: '1' });
  await direct.connect(new StdioClientTransport({ command: server[0], args: server.slice(1), stderr: 'ignore', env: process.env as Record<string, string> }));
  try {
    for (const [name, args] of calls) {
      const viaGate = await gated.client.callTool({ name, arguments: args });
      const plain = await direct.callTool({ name, arguments: args });
      assert.deepEqual(viaGate, plain, name);
      assert.notEqual((viaGate as { isError?: boolean }).isError, true, `${name} answered with an error`);
    }
  } finally {
    await gated.close();
    await direct.close();
  }
}

test('server-everything: every tool declared; read tools work in enforce mode unchanged; writes marked', async () => {
  const server = [process.execPath, EVERYTHING, 'stdio'];
  const d = draft(server);
  const direct = new Client({ name: 'lister', version: '1' });
  await direct.connect(new StdioClientTransport({ command: server[0], args: server.slice(1), stderr: 'ignore' }));
  const listed = (await direct.listTools()).tools;
  await direct.close();
  assert.deepEqual(Object.keys(d.doc.tools).sort(), listed.map((t) => t.name).sort());
  assert.match(d.doc.release, /^mcp-servers\/everything@\d/); // the server's own name@version
  for (const t of listed) {
    const decl = d.doc.tools[t.name];
    assert.equal(decl.effect, t.annotations?.readOnlyHint === true ? 'read' : 'write', t.name);
    const req = (t.inputSchema.required ?? []) as string[];
    for (const [arg, s] of Object.entries(t.inputSchema.properties ?? {})) {
      assert.ok(arg in decl.arguments, `${t.name}.${arg} declared`);
      assert.equal(decl.arguments[arg].required === true, req.includes(arg), `${t.name}.${arg} required`);
      const schema = s as { type?: string; enum?: unknown[]; minimum?: number; maximum?: number };
      if (schema.type) assert.equal(decl.arguments[arg].type, schema.type, `${t.name}.${arg} type`);
      if (schema.enum) assert.deepEqual(decl.arguments[arg].enum, schema.enum);
      if (schema.minimum !== undefined) assert.equal(decl.arguments[arg].minimum, schema.minimum);
      if (schema.maximum !== undefined) assert.equal(decl.arguments[arg].maximum, schema.maximum);
    }
  }
  assert.match(d.manifest, /gzip-file-as-resource:\n    effect: write {4}# readOnlyHint false\n    # REVIEW: a write[^\n]*\n    # approval: required/);
  assert.match(d.manifest, /# v1 cannot hold: data: format "uri"/);
  assert.match(d.policy, /@id\("read:echo"\)\npermit \(principal, action == Action::"call_tool", resource == Tool::"echo"\);/);
  await sameAnswers(server, d, [
    ['echo', { message: 'drafted' }],
    ['get-sum', { a: 2, b: 40 }],
    ['get-structured-content', { location: 'Chicago' }],
    ['get-annotated-message', { messageType: 'success', includeImage: false }],
    ['get-resource-links', { count: 2 }],
    ['get-tiny-image', {}],
  ]);
});

test('server-filesystem: read tools work in enforce mode unchanged with the draft', async () => {
  const root = tempDir('cloakpipe-fs-');
  mkdirSync(join(root, 'docs'));
  writeFileSync(join(root, 'docs', 'a.txt'), 'alpha\nbeta\n');
  const server = [process.execPath, FILESYSTEM, root];
  const d = draft(server);
  assert.equal(d.doc.tools.write_file.effect, 'write');
  assert.equal(d.doc.tools.read_text_file.effect, 'read');
  assert.match(d.manifest, /# v1 cannot hold: paths: minItems 1/);
  await sameAnswers(server, d, [
    ['list_allowed_directories', {}],
    ['list_directory', { path: root }],
    ['read_text_file', { path: join(root, 'docs', 'a.txt') }],
    ['read_text_file', { path: join(root, 'docs', 'a.txt'), head: 1 }],
    ['read_multiple_files', { paths: [join(root, 'docs', 'a.txt')] }],
    ['search_files', { path: root, pattern: 'a.txt' }],
    ['directory_tree', { path: root }],
  ]);
});

test('server-memory: read tools work in enforce mode unchanged with the draft', async () => {
  const store = join(tempDir('cloakpipe-mem-'), 'memory.jsonl');
  writeFileSync(store, JSON.stringify({ type: 'entity', name: 'Ada', entityType: 'person', observations: ['writes programs'] }) + '\n');
  const server = [process.execPath, MEMORY];
  const d = draft(server);
  assert.deepEqual(
    Object.entries(d.doc.tools).filter(([, t]) => t.effect === 'read').map(([n]) => n).sort(),
    ['open_nodes', 'read_graph', 'search_nodes'],
  );
  assert.match(d.manifest, /delete_entities:\n    effect: write {4}# destructiveHint true/);
  process.env.MEMORY_FILE_PATH = store; // the gate's environment reaches the upstream (minus CLOAKPIPE_*)
  try {
    await sameAnswers(server, d, [
      ['read_graph', {}],
      ['search_nodes', { query: 'Ada' }],
      ['open_nodes', { names: ['Ada'] }],
    ]);
  } finally {
    delete process.env.MEMORY_FILE_PATH;
  }
});

test('every page is read, and what v1 cannot hold is named, never dropped', async () => {
  const d = draft([process.execPath, helperScript('upstream.js'), 'paged']);
  assert.deepEqual(Object.keys(d.doc.tools), ['lookup', 'send', 'unannotated']);
  assert.equal(d.doc.release, 'paged-tools@3.1.4');
  const lookup = d.doc.tools.lookup.arguments;
  assert.deepEqual(lookup.id, { type: 'string', pattern: '^C[0-9]{6}$', required: true });
  assert.equal(lookup.code.pattern, '(?s:.*)(?:ab+)(?s:.*)'); // JSON Schema patterns search; the manifest's match whole values
  assert.deepEqual(lookup.limit, { type: 'integer', minimum: 1, maximum: 99 }); // an exclusive integer bound, exactly
  assert.deepEqual(lookup.tags, { type: 'array', max_items: 5, items: { type: 'string', max_len: 10 } });
  assert.equal(lookup.score.minimum, 0);
  const send = d.doc.tools.send;
  assert.equal(send.effect, 'write');
  assert.deepEqual(send.arguments.mode, { enum: ['plain'] });
  assert.equal(send.arguments.lookahead.pattern, undefined);
  for (const named of [
    /score: exclusiveMinimum 0 is exclusive/,
    /tags: minItems 1 has no v1 rule/,
    /to: format "email" has no v1 rule/,
    /when: type \["string","null"\] names several types/,
    /when: maxLength 30 applies to one of several types/,
    /options: properties urgent of this object are not checked/,
    /options: required \["urgent"\] inside an object argument/,
    /lookahead: pattern "\^\(\?!admin\)\.\*\$" is not RE2-compatible/,
    /x: anyOf .* has no v1 rule/,
    /# operation_id: idempotency_key/,
    /unannotated:\n    effect: write {4}# no readOnlyHint/,
    /# NOT DECLARED: "has space": its name is not a valid manifest tool name/,
  ]) assert.match(d.manifest, named);
  // The drafted rules hold in enforce mode: a value outside them is refused, one inside passes.
  const gated = await startGate({ home: makeHome(), manifest: d.out, policy: d.policyPath, upstream: [process.execPath, helperScript('upstream.js'), 'paged'] });
  try {
    const ok = (await gated.client.callTool({ name: 'lookup', arguments: { id: 'C123456', code: 'xxabbx', limit: 99 } })) as { content: { text: string }[] };
    assert.equal(JSON.parse(ok.content[0].text).tool, 'lookup');
    for (const args of [{ id: 'C12345' }, { id: 'C123456', code: 'xyz' }, { id: 'C123456', limit: 100 }, { id: 'C123456', tags: ['a', 'b', 'c', 'd', 'e', 'f'] }])
      await assert.rejects(gated.client.callTool({ name: 'lookup', arguments: args }), /argument_invalid/, JSON.stringify(args));
  } finally {
    await gated.close();
  }
});

test('a server that cannot start is exit 2, named; without a server it is a usage error', () => {
  const r = cloakpipe(['manifest', 'draft', '--', 'cloakpipe-no-such-server-51c2']);
  assert.equal(r.status, 2);
  assert.match(r.stderr, /cannot start the server "cloakpipe-no-such-server-51c2": command not found/);
  const u = cloakpipe(['manifest', 'draft']);
  assert.equal(u.status, 2);
  assert.match(u.stderr, /name the server/);
});

test('without --out the manifest goes to stdout and still loads, the policy as a comment', () => {
  const r = cloakpipe(['manifest', 'draft', '--release', 'paged@1', '--upstream', `${process.execPath} ${helperScript('upstream.js')} paged`]);
  assert.equal(r.status, 0, r.stderr);
  const dir = tempDir();
  writeFileSync(join(dir, 'm.yaml'), r.stdout);
  writeFileSync(join(dir, 'p.cedar'), 'permit (principal, action, resource);\n');
  const doc = parseYaml(r.stdout) as { release: string };
  assert.equal(doc.release, 'paged@1');
  assert.match(r.stdout, /# @id\("read:lookup"\)/);
  assert.equal(cloakpipe(['policy', 'check', '--manifest', join(dir, 'm.yaml'), '--policy', join(dir, 'p.cedar')]).status, 0);
});

test('--upstream-url drafts from a remote server (Streamable HTTP) as from its stdio form', async () => {
  const { spawn } = await import('node:child_process');
  const { createServer } = await import('node:net');
  const port = await new Promise<number>((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => resolve(p));
    });
  });
  const child = spawn(process.execPath, [EVERYTHING, 'streamableHttp'], { env: { ...process.env, PORT: String(port) }, stdio: ['ignore', 'ignore', 'pipe'] });
  try {
    await new Promise<void>((resolve, reject) => {
      let err = '';
      child.stderr!.on('data', (d: Buffer) => {
        err += d.toString();
        if (err.includes('listening')) resolve();
      });
      child.once('exit', () => reject(new Error(`server-everything exited: ${err}`)));
    });
    const dir = tempDir();
    const r = cloakpipe(['manifest', 'draft', '--out', join(dir, 'm.yaml'), '--upstream-url', `http://user:secret@127.0.0.1:${port}/mcp?token=t0k3n`], { timeout: 60_000 });
    assert.equal(r.status, 0, r.stderr);
    const remote = readFileSync(join(dir, 'm.yaml'), 'utf8');
    assert.doesNotMatch(remote, /secret|t0k3n/, 'no credentials or query in the draft');
    const local = draft([process.execPath, EVERYTHING, 'stdio']);
    const body = (m: string) => m.replace(/^#[^\n]*\n/gm, '');
    assert.equal(body(remote), body(local.manifest));
    assert.equal(cloakpipe(['policy', 'check', '--manifest', join(dir, 'm.yaml'), '--policy', join(dir, 'm.cedar')]).status, 0);
  } finally {
    child.kill();
  }
});

test('a server that never answers tools/list is reported within --timeout, exit 2', () => {
  const r = cloakpipe(['manifest', 'draft', '--timeout', '2s', '--', process.execPath, '-e', 'setInterval(() => {}, 1000)'], { timeout: 30_000 });
  assert.equal(r.status, 2, r.stderr);
  assert.match(r.stderr, /did not answer tools\/list within 2000 ms/);
});

test('every keyword of a whole inputSchema that v1 cannot hold is named, known to JSON Schema or not', () => {
  const d = draftFromTools(
    [
      {
        name: 'search',
        annotations: { readOnlyHint: true },
        inputSchema: { type: 'object', title: 'Search', properties: { q: { type: 'string' } }, minProperties: 1, unevaluatedProperties: false, 'x-vendor': { strict: true }, anyOf: [{ required: ['q'] }], $defs: {} },
      },
      { name: 'odd', annotations: { readOnlyHint: true }, inputSchema: { type: 'array' } },
    ],
    { release: 'k@1', source: 'test' },
  );
  for (const k of ['minProperties', 'unevaluatedProperties', 'x-vendor', 'anyOf', '\\$defs']) assert.match(d.manifest, new RegExp(`# v1 cannot hold: inputSchema ${k} has no v1 rule`), k);
  assert.match(d.manifest, /# v1 cannot hold: inputSchema type "array" is not "object"/);
  for (const held of ['title', 'type', 'properties']) assert.doesNotMatch(d.manifest, new RegExp(`inputSchema ${held} has no v1 rule`), held);
});
