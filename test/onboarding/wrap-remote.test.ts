// `cloakpipe wrap` of remote (url) entries as Claude Code, VS Code, Cursor and Windsurf write
// them: each becomes `mcp-proxy --upstream-url URL` with its headers moved to a 0600 file of the
// home (never left in the host's config, never on the command line, never printed, not even in
// the dry run's diff). Started as the host starts it, the rewritten entry reaches a real
// Streamable HTTP server (a small SDK server that records the headers it receives and answers
// 401 without the token; server-everything in its streamableHttp mode): the header arrives, the
// host never sees it. Entries the gate cannot speak for (HTTP+SSE, ${input:…}) are left byte for
// byte; unwrap restores every byte and removes the header files.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseJsonc } from 'jsonc-parser';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { CLI, tempDir } from '../helpers/cli.js';
import { startRecordingServer } from '../helpers/recording-http-server.js';
import { startEverythingHttp } from '../helpers/everything-http.js';
import { put, trusted, type World, world } from './host-world.js';

const SECRET = 'CANARY-remote-token-6d1f';
const TEAM = 'CANARY-team-header-0b7e';

/** The CLI run without blocking this process: the recording server answers from here. */
function run(w: World, args: string[]): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const c = spawn(process.execPath, [CLI, ...trusted(args)], { cwd: w.project, env: w.env });
    let stdout = '';
    let stderr = '';
    c.stdout.on('data', (d) => (stdout += d));
    c.stderr.on('data', (d) => (stderr += d));
    c.on('exit', (status) => resolve({ status, stdout, stderr }));
  });
}

type Entry = { type?: string; command: string; args: string[]; url?: string; serverUrl?: string; headers?: unknown };
const entryOf = (path: string, key: string, name: string): Entry => (parseJsonc(readFileSync(path, 'utf8')) as Record<string, Record<string, Entry>>)[key][name];

/** The entry started as a host starts it (enforce mode), with the gate's stderr kept. */
async function startAsHost(e: Entry): Promise<{ client: Client; stderr: () => string }> {
  const args = [...e.args];
  args[args.indexOf('--mode') + 1] = 'enforce';
  const t = new StdioClientTransport({ command: e.command, args, stderr: 'pipe' });
  let err = '';
  t.stderr?.on('data', (d: Buffer) => (err += d.toString()));
  const client = new Client({ name: 'host', version: '1' });
  await client.connect(t);
  return { client, stderr: () => err };
}

const text = (r: unknown) => ((r as { content: { type: string; text?: string }[] }).content.find((c) => c.type === 'text')?.text ?? '');

test('wrap remote entries: headers to a 0600 file, the entry runs mcp-proxy --upstream-url; the header reaches the server, never the host; unwrap restores every byte', async () => {
  const server = await startRecordingServer({ authorization: `Bearer ${SECRET}` });
  const everything = await startEverythingHttp().catch(async (e) => {
    await server.close();
    throw e;
  });
  const w = world('cloakpipe-wrap-remote-');
  const J = JSON.stringify;
  try {
    const auth = { Authorization: `Bearer ${SECRET}`, 'X-Team': TEAM };
    // Claude Code (.mcp.json): "type": "http", "url", "headers".
    const claudeCode = put(join(w.project, '.mcp.json'), J({ mcpServers: { vendor: { type: 'http', url: server.url, headers: auth } } }, null, 2) + '\n');
    // VS Code: JSONC, tabs; one wrapped, one with an ${input:…} the host asks for, one HTTP+SSE.
    const vscode = put(
      join(w.project, '.vscode', 'mcp.json'),
      `{\n\t"inputs": [{ "type": "promptString", "id": "token", "password": true }],\n\t"servers": {\n\t\t// the vendor's server\n\t\t"vendor-vs": { "type": "http", "url": ${J(server.url)}, "headers": { "Authorization": ${J(`Bearer ${SECRET}`)} } },\n\t\t"asks": { "type": "http", "url": ${J(server.url)}, "headers": { "Authorization": "Bearer \${input:token}" } },\n\t\t"legacy": { "type": "sse", "url": "http://127.0.0.1:9/sse" },\n\t}\n}\n`,
    );
    // Cursor: no "type", "url" and "headers".
    const cursor = put(join(w.home, '.cursor', 'mcp.json'), `{\n  "mcpServers": {\n    "vendor": { "url": ${J(server.url)}, "headers": ${J(auth)} }\n  }\n}\n`);
    // Windsurf: "serverUrl", no headers (server-everything needs none).
    const windsurf = put(join(w.home, '.codeium', 'windsurf', 'mcp_config.json'), `{\n    "mcpServers": {\n        "everything": {\n            "serverUrl": ${J(everything.url)},\n            "disabled": false\n        }\n    }\n}\n`);
    const all = [claudeCode, vscode, cursor, windsurf];
    const before = new Map(all.map((p) => [p, readFileSync(p, 'utf8')]));

    const dry = await run(w, ['wrap', '--dry-run']);
    assert.equal(dry.status, 0, dry.stderr);
    assert.match(dry.stdout, /<redacted>/);
    assert.match(dry.stdout, /"--upstream-url"/);
    for (const s of [SECRET, TEAM]) assert.ok(!dry.stdout.includes(s) && !dry.stderr.includes(s), 'a header value in the dry run');
    for (const p of all) assert.equal(readFileSync(p, 'utf8'), before.get(p));

    const r = await run(w, ['wrap', '--timeout', '60s']);
    assert.equal(r.status, 0, r.stderr);
    for (const s of [SECRET, TEAM]) assert.ok(!r.stderr.includes(s) && !r.stdout.includes(s), 'a header value in wrap output');
    assert.match(r.stderr, /"asks": left as is: a remote \(url\) server: uses \$\{…\} variables/);
    assert.match(r.stderr, /"legacy": left as is: a remote \(url\) server: "type": "sse" is the older HTTP\+SSE transport/);
    // What was left is as it was; no header value is left in any config.
    assert.ok(readFileSync(vscode, 'utf8').includes(`\t\t"asks": { "type": "http", "url": ${J(server.url)}, "headers": { "Authorization": "Bearer \${input:token}" } },\n\t\t"legacy": { "type": "sse", "url": "http://127.0.0.1:9/sse" },`));
    assert.match(readFileSync(vscode, 'utf8'), /\t\t\/\/ the vendor's server\n/);
    for (const p of all) for (const s of [SECRET, TEAM]) assert.ok(!readFileSync(p, 'utf8').includes(s), `${p} still holds a header value`);

    const entries: [string, Entry, boolean][] = [
      [claudeCode, entryOf(claudeCode, 'mcpServers', 'vendor'), true],
      [vscode, entryOf(vscode, 'servers', 'vendor-vs'), true],
      [cursor, entryOf(cursor, 'mcpServers', 'vendor'), true],
      [windsurf, entryOf(windsurf, 'mcpServers', 'everything'), false],
    ];
    for (const [path, e, headers] of entries) {
      assert.equal(e.command, process.execPath);
      assert.equal(e.url ?? e.serverUrl ?? e.headers, undefined, `${path}: the url and headers keys are gone`);
      const url = e.args[e.args.indexOf('--upstream-url') + 1];
      assert.equal(url, headers ? server.url : everything.url);
      assert.equal(e.args.includes('--upstream-header-file'), headers);
      assert.ok(!e.args.includes('--'));
    }
    assert.equal(entryOf(claudeCode, 'mcpServers', 'vendor').type, 'stdio');
    assert.equal(entryOf(vscode, 'servers', 'vendor-vs').type, 'stdio');
    assert.equal(entryOf(cursor, 'mcpServers', 'vendor').type, undefined, 'no "type" where there was none');
    assert.equal((entryOf(windsurf, 'mcpServers', 'everything') as unknown as { disabled: boolean }).disabled, false, 'other keys kept');
    // Two hosts' "vendor" entries with the same URL and headers share servers/vendor.
    const file = join(w.gate, 'servers', 'vendor', 'upstream.headers');
    assert.equal(statSync(file).mode & 0o777, 0o600);
    assert.match(readFileSync(file, 'utf8'), new RegExp(`^Authorization: Bearer ${SECRET}$`, 'm'));
    assert.ok(!existsSync(join(w.gate, 'servers', 'everything', 'upstream.headers')));

    // Each wrapped entry, started as the host would, in enforce mode with the drafted manifest.
    server.seen.length = 0;
    for (const [path, e, headers] of entries) {
      const { client, stderr } = await startAsHost(e);
      try {
        const r1 = await client.callTool({ name: 'echo', arguments: { message: 'through the gate' } });
        assert.equal(text(r1), 'Echo: through the gate', path);
        const seenByHost = JSON.stringify([r1, await client.listTools(), client.getServerVersion(), client.getServerCapabilities()]);
        for (const s of [SECRET, TEAM]) assert.ok(!seenByHost.includes(s), 'the host saw a header value');
        if (headers) {
          const w1 = await client.callTool({ name: 'slow_write', arguments: { note: 'n1' } });
          assert.equal(text(w1), 'stored n1');
        }
      } finally {
        await client.close();
      }
      for (const s of [SECRET, TEAM]) assert.ok(!stderr().includes(s), 'the gate logged a header value');
    }
    // Positive control: the server saw the token and the team header on every request.
    assert.ok(server.seen.length >= 9);
    for (const q of server.seen) assert.equal(q.headers.authorization, `Bearer ${SECRET}`);
    assert.ok(server.seen.some((q) => q.headers['x-team'] === TEAM));
    assert.deepEqual(server.writes, ['n1', 'n1', 'n1']);
    // The ledger holds digests only.
    const ledger = readFileSync(join(w.gate, 'ledger.db')).toString('latin1');
    for (const s of [SECRET, TEAM]) assert.ok(!ledger.includes(s), 'a header value in the ledger');

    // Wrapping twice changes nothing.
    const wrapped = new Map(all.map((p) => [p, readFileSync(p, 'utf8')]));
    const again = await run(w, ['wrap', '--timeout', '60s']);
    assert.equal(again.status, 0, again.stderr);
    assert.match(again.stderr, /"vendor": already wrapped/);
    for (const p of all) assert.equal(readFileSync(p, 'utf8'), wrapped.get(p));

    // unwrap: every byte back, the header files gone with the last entry that used them.
    const dryU = await run(w, ['unwrap', '--dry-run']);
    assert.equal(dryU.status, 0, dryU.stderr);
    for (const s of [SECRET, TEAM]) assert.ok(!dryU.stdout.includes(s), 'a header value in the unwrap diff');
    const u = await run(w, ['unwrap']);
    assert.equal(u.status, 0, u.stderr);
    for (const p of all) assert.equal(readFileSync(p, 'utf8'), before.get(p), `${p}: restored byte for byte`);
    assert.ok(!existsSync(file), 'the header file went with the last wrapped entry');
  } finally {
    await server.close();
    await everything.stop();
  }
});

test('remote entries wrap cannot speak for are named and left: a server that refuses the headers, a reserved header, credentials in the URL, url and command at once', async () => {
  const w = world('cloakpipe-wrap-remote-');
  const J = JSON.stringify;
  const path = put(
    join(w.project, '.mcp.json'),
    J(
      {
        mcpServers: {
          down: { type: 'http', url: 'http://127.0.0.1:9/mcp', headers: { Authorization: `Bearer ${SECRET}` } },
          hosted: { type: 'http', url: 'http://127.0.0.1:9/mcp', headers: { Host: SECRET } },
          inurl: { type: 'http', url: `https://user:${SECRET}@mcp.example.com/mcp` },
          crlf: { type: 'http', url: 'http://127.0.0.1:9/mcp', headers: { 'X-Key': `a\r\nX-Injected: ${SECRET}` } },
          both: { type: 'http', url: 'http://127.0.0.1:9/mcp', command: 'node' },
        },
      },
      null,
      2,
    ),
  );
  const before = readFileSync(path, 'utf8');
  const r = await run(w, ['wrap', '--host', 'claude-code', '--timeout', '10s']);
  assert.equal(r.status, 1, r.stderr);
  assert.match(r.stderr, /"down": left as is: cannot reach the server "http:\/\/127\.0\.0\.1:9" \(path elided: it may hold a key\)/);
  assert.match(r.stderr, /"hosted": left as is: a remote \(url\) server: header "Host": Host: the gate sets this header itself/);
  assert.match(r.stderr, /"inurl": left as is: a remote \(url\) server: its URL must not carry credentials: move them to "headers"/);
  assert.match(r.stderr, /"crlf": left as is: a remote \(url\) server: header "X-Key": X-Key: the value holds a line break/);
  assert.match(r.stderr, /"both": left as is: a remote \(url\) server: both "command" and "url"/);
  assert.ok(!r.stderr.includes(SECRET), r.stderr);
  assert.equal(readFileSync(path, 'utf8'), before);
  assert.ok(!existsSync(join(w.gate, 'servers', 'down')), 'no header file for a server left as is');
});

test('manifest draft --upstream-url with --upstream-header-file: drafts a server that needs the header; without it the 401 is named; the value never shown', async () => {
  const server = await startRecordingServer({ authorization: `Bearer ${SECRET}` });
  const w = world();
  const file = join(tempDir(), 'h');
  writeFileSync(file, `Authorization: Bearer ${SECRET}\n`, { mode: 0o600 });
  try {
    const ok = await run(w, ['manifest', 'draft', '--upstream-url', server.url, '--upstream-header-file', file]);
    assert.equal(ok.status, 0, ok.stderr);
    assert.match(ok.stdout, /^ {2}echo:/m);
    assert.match(ok.stdout, /^ {2}slow_write:/m);
    const refused = await run(w, ['manifest', 'draft', '--upstream-url', server.url]);
    assert.equal(refused.status, 2);
    assert.match(refused.stderr, /401/);
    for (const r of [ok, refused]) assert.ok(!r.stdout.includes(SECRET) && !r.stderr.includes(SECRET));
    const orphan = await run(w, ['manifest', 'draft', '--upstream-header-file', file, '--', 'node']);
    assert.equal(orphan.status, 2);
    assert.match(orphan.stderr, /need --upstream-url/);
  } finally {
    await server.close();
  }
});
