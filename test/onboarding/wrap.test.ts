// `cloakpipe wrap` / `unwrap` on config files as Claude Desktop, Claude Code, Cursor, VS Code and
// Windsurf write them: each rewritten entry started exactly as the host starts it (the SDK's
// StdioClientTransport with the entry's command, args, env and cwd) serves allowed calls in
// enforce mode with the drafted manifest unchanged; wrapping twice changes nothing; unwrap
// restores every byte; a bad config or server is named and left; a kill mid-write leaves the
// old file or the new one.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, realpathSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseJsonc } from 'jsonc-parser';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { CLI, EVERYTHING, FILESYSTEM, MEMORY } from '../helpers/cli.js';
import { GATE_NODE_FLAGS } from '../../src/cli/node-flags.js';
import { put, run, trusted, world } from './host-world.js';

type Entry = { command: string; args: string[]; env?: Record<string, string>; cwd?: string };

function entryOf(path: string, key: string, name: string): Entry {
  return (parseJsonc(readFileSync(path, 'utf8')) as Record<string, Record<string, Entry>>)[key][name];
}

/** Starts the entry as a host does, with the mode flipped to enforce (the drafted manifest as it is). */
async function startAsHost(e: Entry): Promise<Client> {
  const args = [...e.args];
  const m = args.indexOf('--mode');
  assert.equal(args[m + 1], 'shadow', 'wrap defaults to shadow mode');
  args[m + 1] = 'enforce';
  const client = new Client({ name: 'host', version: '1' });
  const transport = new StdioClientTransport({ command: e.command, args, env: e.env, cwd: e.cwd, stderr: 'ignore' });
  await client.connect(transport);
  // The process the host started is node with the gate's Node options (ADR 067): V8 reads them
  // only at start, so they must be on the command line the host runs.
  const argv = readFileSync(`/proc/${transport.pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
  assert.deepEqual(argv.slice(1, GATE_NODE_FLAGS.length + 2), [...GATE_NODE_FLAGS, realpathSync(CLI)], 'the gate runs with its Node options');
  return client;
}

const text = (r: unknown) => ((r as { content: { type: string; text?: string }[] }).content.find((c) => c.type === 'text')?.text ?? '');

test('wrap every host config; each entry, started as the host would, serves allowed calls in enforce mode; idempotent; unwrap restores every byte', async () => {
  const w = world();
  const files = join(w.project, 'files');
  mkdirSync(files);
  writeFileSync(join(files, 'notes.txt'), 'gated hello\n');
  const memFile = join(w.project, 'memory.jsonl');
  writeFileSync(memFile, JSON.stringify({ type: 'entity', name: 'Ada', entityType: 'person', observations: ['wrote programs'] }) + '\n');
  const homeDocs = join(w.home, 'docs');
  mkdirSync(homeDocs);
  writeFileSync(join(homeDocs, 'moth.txt'), 'found a moth\n');
  const J = JSON.stringify;
  // Claude Desktop: plain JSON, two spaces, as its settings page writes it.
  const desktop = put(
    join(w.home, '.config', 'Claude', 'claude_desktop_config.json'),
    `{\n  "mcpServers": {\n    "filesystem": {\n      "command": "node",\n      "args": [\n        ${J(FILESYSTEM)},\n        ${J(files)}\n      ]\n    }\n  },\n  "globalShortcut": "Ctrl+Space"\n}\n`,
  );
  // Cursor (user): JSONC is fine, env kept.
  const cursor = put(
    join(w.home, '.cursor', 'mcp.json'),
    `{\n  // Cursor reads comments\n  "mcpServers": {\n    "memory": { "command": ${J(process.execPath)}, "args": [${J(MEMORY)}], "env": { "MEMORY_FILE_PATH": ${J(memFile)} } },\n  }\n}\n`,
  );
  // VS Code (project): JSONC with tabs, "servers", "type", "inputs", a remote entry.
  const vscode = put(
    join(w.project, '.vscode', 'mcp.json'),
    `{\n\t"inputs": [\n\t\t{ "type": "promptString", "id": "token", "description": "API token", "password": true }\n\t],\n\t"servers": {\n\t\t// the reference server\n\t\t"everything": {\n\t\t\t"type": "stdio",\n\t\t\t"command": "node",\n\t\t\t"args": [${J(EVERYTHING)}, "stdio"]\n\t\t},\n\t\t"remote": {\n\t\t\t"type": "http",\n\t\t\t"url": "http://127.0.0.1:9/mcp"\n\t\t}\n\t}\n}\n`,
  );
  // Claude Code (project .mcp.json): one server that cannot start, one that never answers.
  const claudeCode = put(
    join(w.project, '.mcp.json'),
    `{\n  "mcpServers": {\n    "broken": {\n      "type": "stdio",\n      "command": "definitely-not-a-command-xyz",\n      "args": [],\n      "env": {}\n    },\n    "silent": {\n      "type": "stdio",\n      "command": ${J(process.execPath)},\n      "args": ["-e", "setInterval(() => {}, 1000)"]\n    },\n    "everything-too": {\n      "type": "stdio",\n      "command": ${J(process.execPath)},\n      "args": [${J(EVERYTHING)}, "stdio"]\n    }\n  }\n}\n`,
  );
  // Windsurf: a cwd to keep; the server's root "." is that folder.
  const windsurf = put(
    join(w.home, '.codeium', 'windsurf', 'mcp_config.json'),
    `{\n    "mcpServers": {\n        "docs": {\n            "command": ${J(process.execPath)},\n            "args": [${J(FILESYSTEM)}, "."],\n            "cwd": ${J(homeDocs)}\n        }\n    }\n}\n`,
  );
  const all = [desktop, cursor, vscode, claudeCode, windsurf];
  const before = new Map(all.map((p) => [p, readFileSync(p, 'utf8')]));

  const r = run(w, 'wrap', ['--timeout', '20s']);
  assert.equal(r.status, 1, `a server was left, so exit 1\n${r.stderr}`);
  assert.match(r.stderr, /"broken": left as is: cannot start the server "definitely-not-a-command-xyz": command not found/);
  assert.match(r.stderr, /"silent": left as is: the server did not answer tools\/list within 20000 ms/);
  assert.match(r.stderr, /"remote": left as is: cannot reach the server "http:\/\/127\.0\.0\.1:9" \(path elided: it may hold a key\)/);

  // The others are wrapped; what was left is byte for byte as it was.
  const cc = readFileSync(claudeCode, 'utf8');
  for (const left of ['broken', 'silent']) {
    const i = before.get(claudeCode)!.indexOf(`"${left}"`);
    const chunk = before.get(claudeCode)!.slice(i, before.get(claudeCode)!.indexOf('}', i) + 1);
    assert.ok(cc.includes(chunk), `${left} kept as it was`);
  }
  assert.match(readFileSync(vscode, 'utf8'), /\t\t"remote": \{\n\t\t\t"type": "http",\n\t\t\t"url": "http:\/\/127\.0\.0\.1:9\/mcp"\n\t\t\}/);
  // Other keys, comments, order and indentation stay.
  assert.match(readFileSync(desktop, 'utf8'), /\n  "globalShortcut": "Ctrl\+Space"\n\}\n$/);
  assert.match(readFileSync(vscode, 'utf8'), /^\{\n\t"inputs": \[\n\t\t\{ "type": "promptString"[^\n]*\n\t\],\n\t"servers": \{\n\t\t\/\/ the reference server\n\t\t"everything": \{\n\t\t\t"type": "stdio",\n\t\t\t"command": /);
  assert.match(readFileSync(cursor, 'utf8'), /\/\/ Cursor reads comments/);
  for (const name of ['filesystem', 'memory', 'everything', 'everything-too', 'docs']) {
    assert.ok(existsSync(join(w.gate, 'servers', name, 'manifest.yaml')), `${name} drafted`);
    assert.ok(existsSync(join(w.gate, 'servers', name, 'policy.cedar')), `${name} policy`);
  }
  assert.ok(!existsSync(join(w.gate, 'servers', 'broken')) && !existsSync(join(w.gate, 'servers', 'silent')));
  assert.equal(readdirSync(join(w.gate, 'backups')).length, 5, 'one backup per file changed');

  const fsEntry = entryOf(desktop, 'mcpServers', 'filesystem');
  assert.equal(fsEntry.command, process.execPath, 'the gate by absolute path: GUI hosts have no PATH to rely on');
  assert.deepEqual(fsEntry.args.slice(0, GATE_NODE_FLAGS.length + 1), [...GATE_NODE_FLAGS, realpathSync(CLI)], "the gate's Node options, then its main.js");
  assert.deepEqual(fsEntry.args.slice(fsEntry.args.indexOf('--') + 1), ['node', FILESYSTEM, files], 'the original command after --');
  assert.deepEqual(entryOf(cursor, 'mcpServers', 'memory').env, { MEMORY_FILE_PATH: memFile });
  assert.equal(entryOf(windsurf, 'mcpServers', 'docs').cwd, homeDocs);

  const manifests = new Map(['filesystem', 'memory', 'everything', 'docs'].map((n) => [n, readFileSync(join(w.gate, 'servers', n, 'manifest.yaml'), 'utf8')]));

  // Each wrapped entry, as the host starts it, in enforce mode.
  const fsClient = await startAsHost(fsEntry);
  try {
    assert.equal(text(await fsClient.callTool({ name: 'read_text_file', arguments: { path: join(files, 'notes.txt') } })), 'gated hello\n');
    assert.match(text(await fsClient.callTool({ name: 'list_directory', arguments: { path: files } })), /\[FILE\] notes\.txt/);
    // The gate really is in front: an argument the manifest does not declare is refused.
    await assert.rejects(fsClient.callTool({ name: 'read_text_file', arguments: { path: join(files, 'notes.txt'), sneaky: 1 } }), (e: unknown) => e instanceof McpError && typeof (e.data as { reason?: unknown }).reason === 'string');
  } finally {
    await fsClient.close();
  }
  const mem = await startAsHost(entryOf(cursor, 'mcpServers', 'memory'));
  try {
    assert.match(text(await mem.callTool({ name: 'search_nodes', arguments: { query: 'Ada' } })), /wrote programs/, 'the entry env reached the server');
  } finally {
    await mem.close();
  }
  const docs = await startAsHost(entryOf(windsurf, 'mcpServers', 'docs'));
  try {
    assert.equal(text(await docs.callTool({ name: 'read_text_file', arguments: { path: join(homeDocs, 'moth.txt') } })), 'found a moth\n', 'the entry cwd reached the server');
  } finally {
    await docs.close();
  }
  for (const [file, name] of [[vscode, 'everything'], [claudeCode, 'everything-too']] as const) {
    const ev = await startAsHost(entryOf(file, file === vscode ? 'servers' : 'mcpServers', name));
    try {
      assert.equal(text(await ev.callTool({ name: 'echo', arguments: { message: 'through the gate' } })), 'Echo: through the gate');
      assert.match(text(await ev.callTool({ name: 'get-sum', arguments: { a: 2, b: 40 } })), /42/);
    } finally {
      await ev.close();
    }
  }
  for (const [n, m] of manifests) assert.equal(readFileSync(join(w.gate, 'servers', n, 'manifest.yaml'), 'utf8'), m, `${n}: the drafted manifest unchanged`);

  // Wrapping twice changes nothing.
  const wrapped = new Map(all.map((p) => [p, readFileSync(p, 'utf8')]));
  const again = run(w, 'wrap', ['--timeout', '5s']);
  assert.match(again.stderr, /"filesystem": already wrapped/);
  for (const p of all) assert.equal(readFileSync(p, 'utf8'), wrapped.get(p), `${p}: unchanged by a second wrap`);

  // unwrap restores the bytes exactly.
  const u = run(w, 'unwrap');
  assert.equal(u.status, 0, u.stderr);
  for (const p of all) assert.equal(readFileSync(p, 'utf8'), before.get(p), `${p}: restored byte for byte`);
});

test('a config the host could not read is named with line and column and left untouched', () => {
  const w = world();
  const desktop = put(join(w.home, '.config', 'Claude', 'claude_desktop_config.json'), `{\n  "mcpServers": {\n    "a": { "command": "node", "args": [] },\n  }\n}\n`);
  // Comments are JSONC: VS Code reads them, Claude Desktop does not.
  const vscodeText = `{\n  // fine here\n  "servers": {}\n}\n`;
  const vscode = put(join(w.project, '.vscode', 'mcp.json'), vscodeText);
  const desktopText = readFileSync(desktop, 'utf8');
  const r = run(w, 'wrap');
  assert.equal(r.status, 1);
  assert.ok(r.stderr.includes(`${desktop}:4:3: not valid JSON (PropertyNameExpected)`), r.stderr);
  assert.doesNotMatch(r.stderr, /mcp\.json:\d+:\d+/);
  assert.equal(readFileSync(desktop, 'utf8'), desktopText);
  assert.equal(readFileSync(vscode, 'utf8'), vscodeText);
  const windsurf = put(join(w.home, '.codeium', 'windsurf', 'mcp_config.json'), `{\n  /* no */ "mcpServers": {}\n}\n`);
  const r2 = run(w, 'wrap', ['--host', 'windsurf']);
  assert.equal(r2.status, 1);
  assert.ok(r2.stderr.includes(`${windsurf}:2:3: not valid JSON (InvalidCommentToken)`), r2.stderr);
  // The same server named twice: hosts disagree on which counts, so wrap will not guess.
  const dup = put(join(w.project, '.mcp.json'), `{"mcpServers": {"a": {"command": "x"}, "a": {"command": "y"}}}`);
  const r3 = run(w, 'wrap', ['--host', 'claude-code']);
  assert.equal(r3.status, 1);
  assert.ok(r3.stderr.includes(`${dup}:1:40: server "a" appears twice`), r3.stderr);
});

test('--dry-run prints the diff and writes nothing', () => {
  const w = world();
  const path = put(join(w.project, '.cursor', 'mcp.json'), `{\n  "mcpServers": {\n    "everything": { "command": "node", "args": [${JSON.stringify(EVERYTHING)}] }\n  }\n}\n`);
  const original = readFileSync(path, 'utf8');
  const r = run(w, 'wrap', ['--host', 'cursor', '--dry-run']);
  assert.equal(r.status, 0, r.stderr);
  assert.ok(r.stdout.startsWith(`--- ${path}\n+++ ${path} (wrapped)\n@@ -1,6 +1,${18 + GATE_NODE_FLAGS.length} @@\n {\n   "mcpServers": {\n-    "everything": { "command": "node", "args": [`), r.stdout);
  const options = GATE_NODE_FLAGS.map((f) => `\\+ {8}"${f}",\\n`).join('');
  assert.match(r.stdout, new RegExp(`\\n\\+ {4}"everything": \\{ "command": "[^"]+", "args": \\[\\n${options}\\+ {8}"[^"]+main\\.js",\\n\\+ {8}"mcp-proxy",\\n\\+ {8}"--server",\\n\\+ {8}"everything",\\n\\+ {8}"--mode",\\n\\+ {8}"shadow",`));
  assert.equal(readFileSync(path, 'utf8'), original);
  assert.ok(!existsSync(join(w.gate, 'servers')) && !existsSync(join(w.gate, 'backups')));
});

test('mcp-proxy --server names a server the home does not have, and refuses a path', () => {
  const w = world();
  for (const [name, msg] of [['nope', /no server "nope" in the home/], ['../x', /is not a server name/]] as const) {
    const r = spawnSync(process.execPath, [CLI, 'mcp-proxy', '--server', name, '--', 'node'], { env: w.env, encoding: 'utf8', input: '' });
    assert.equal(r.status, 2);
    assert.match(r.stderr, msg);
  }
});

test('a SIGKILL while wrap or unwrap replaces the file leaves the old file or the new one, never a mix', async () => {
  const w = world();
  const path = join(w.project, '.mcp.json');
  // Large, so that writing it takes long enough for kills to land during the write.
  const padding = 'x'.repeat(8 * 1024 * 1024);
  const old = `{\n  "notes": "${padding}",\n  "mcpServers": {\n    "everything": { "command": "node", "args": [${JSON.stringify(EVERYTHING)}, "stdio"] }\n  }\n}\n`;
  put(path, old);
  // Draft once so later runs do not start the server: the run is then mostly the write.
  const first = run(w, 'wrap', ['--host', 'claude-code']);
  assert.equal(first.status, 0, first.stderr);
  const wrappedText = readFileSync(path, 'utf8');
  assert.notEqual(wrappedText, old);
  // How long one whole run takes here, so the kills can be spread across it (not a timing assertion).
  const t0 = process.hrtime.bigint();
  assert.equal(run(w, 'unwrap', ['--host', 'claude-code']).status, 0);
  const full = Number(process.hrtime.bigint() - t0) / 1e6;
  assert.equal(readFileSync(path, 'utf8'), old);
  const seen = { old: 0, new: 0 };
  // At least 30 kills, spread across the measured run; the load on this machine moves the
  // replace, so the spread follows what the kills find (later when every kill came before the
  // replace, earlier when every one came after), up to 150 kills, until both sides were hit.
  let scale = 1;
  for (let i = 0; i < 150 && (i < 30 || seen.old === 0 || seen.new === 0); i++) {
    if (i >= 30 && i % 10 === 0) scale *= seen.new === 0 ? 1.5 : 0.6;
    const from = readFileSync(path, 'utf8');
    const cmd = from === old ? 'wrap' : 'unwrap';
    const child = spawn(process.execPath, [CLI, ...trusted([cmd, '--host', 'claude-code'])], { cwd: w.project, env: w.env, stdio: 'ignore' });
    const exited = new Promise((r) => child.once('exit', r));
    await new Promise((r) => setTimeout(r, full * scale * (0.3 + Math.random())));
    child.kill('SIGKILL');
    await exited;
    const now = readFileSync(path, 'utf8');
    assert.ok(now === old || now === wrappedText, `kill ${i}: the file is whole (${now.length} bytes)`);
    if (now === from) seen.old++;
    else seen.new++;
  }
  console.log(`kills: ${seen.old} left the file as it was, ${seen.new} after the replace`);
  assert.ok(seen.old > 0 && seen.new > 0, 'kills landed both before and after the replace');
  // Whatever the kills left, a finished unwrap restores the original bytes.
  const u = run(w, 'unwrap', ['--host', 'claude-code']);
  assert.equal(u.status, 0, u.stderr);
  assert.equal(readFileSync(path, 'utf8'), old);
});

test("Claude Code's local servers in ~/.claude.json (projects[DIR].mcpServers): wrapped for that project only, started as the host would, unwrapped byte for byte", async () => {
  const w = world();
  const other = '/somewhere/else';
  const path = put(
    join(w.home, '.claude.json'),
    JSON.stringify(
      {
        numStartups: 12,
        mcpServers: {},
        projects: {
          [other]: { allowedTools: [], mcpServers: { everything: { type: 'stdio', command: process.execPath, args: [EVERYTHING, 'stdio'], env: {} } } },
          [w.project]: { allowedTools: [], mcpServers: { everything: { type: 'stdio', command: process.execPath, args: [EVERYTHING, 'stdio'], env: {} } }, hasTrustDialogAccepted: true },
        },
        userID: 'abc',
      },
      null,
      2,
    ) + '\n',
  );
  const before = readFileSync(path, 'utf8');
  const r = run(w, 'wrap', ['--host', 'claude-code']);
  assert.equal(r.status, 0, r.stderr);
  const doc = JSON.parse(readFileSync(path, 'utf8'));
  assert.deepEqual(doc.projects[other].mcpServers.everything.args, [EVERYTHING, 'stdio'], "another project's servers are not this project's");
  const entry = doc.projects[w.project].mcpServers.everything as Entry;
  const c = await startAsHost(entry);
  try {
    assert.equal(text(await c.callTool({ name: 'echo', arguments: { message: 'local' } })), 'Echo: local');
  } finally {
    await c.close();
  }
  assert.deepEqual(Object.keys(doc), ['numStartups', 'mcpServers', 'projects', 'userID'], 'key order kept');
  const u = run(w, 'unwrap', ['--host', 'claude-code']);
  assert.equal(u.status, 0, u.stderr);
  assert.equal(readFileSync(path, 'utf8'), before);
});
