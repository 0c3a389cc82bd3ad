// `cloakpipe wrap` / `unwrap` on host config files that are odd on disk or in their text, through
// the real binary: whatever wrap cannot edit exactly as the host will read it is named and left
// byte for byte as it was; nothing it writes (config, backup) loses a byte of the user's file.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { CLI, EVERYTHING } from '../helpers/cli.js';
import { put, run, serverHeld, world } from './host-world.js';

const J = JSON.stringify;

test('a key twice in a server entry or on the way to it: named with line and column, the file left as it is (the host reads the last, an edit would change the first)', () => {
  const w = world();
  const server = `${J(process.execPath)}, "args": [${J(EVERYTHING)}, "stdio"]`;
  // "command" twice: the host starts the second one, whatever wrap writes into the first.
  const commandTwice = put(join(w.project, '.mcp.json'), `{\n  "mcpServers": {\n    "ev": { "command": "bogus", "command": ${server} }\n  }\n}\n`);
  // "args" twice: the host passes the second list, the original server's, to the gate's node.
  const argsTwice = put(join(w.project, '.cursor', 'mcp.json'), `{\n  "mcpServers": {\n    "ev": { "command": ${server}, "args": [${J(EVERYTHING)}, "stdio"] }\n  }\n}\n`);
  // Claude Code's "projects" twice: the host reads this project's servers from the second.
  const projectsTwice = put(
    join(w.home, '.claude.json'),
    `{\n  "projects": { ${J(w.project)}: { "mcpServers": { "ev": { "command": ${server} } } } },\n  "projects": { ${J(w.project)}: { "mcpServers": { "other": { "command": ${server} } } } }\n}\n`,
  );
  const files = [commandTwice, argsTwice, projectsTwice];
  const before = files.map((p) => readFileSync(p, 'utf8'));
  const r = run(w, 'wrap', ['--host', 'claude-code', '--host', 'cursor', '--timeout', '20s']);
  assert.equal(r.status, 1, r.stderr);
  assert.ok(r.stderr.includes(`${commandTwice}:3:33: server "ev": "command" appears twice`), r.stderr);
  assert.ok(r.stderr.includes(`${argsTwice}:3:`) && r.stderr.includes(`server "ev": "args" appears twice`), r.stderr);
  assert.ok(r.stderr.includes(`${projectsTwice}:3:3: "projects" appears twice`), r.stderr);
  files.forEach((p, i) => assert.equal(readFileSync(p, 'utf8'), before[i], `${p} left as it was`));
  assert.ok(!existsSync(join(w.gate, 'servers')) && !existsSync(join(w.gate, 'backups')), 'nothing drafted, nothing backed up');
});

test('a config whose bytes are not UTF-8 is named with line and column and left byte for byte; a U+FFFD written in the file is text like any other', () => {
  const w = world();
  const server = `{ "command": ${J(process.execPath)}, "args": [${J(EVERYTHING)}, "stdio"] }`;
  // A Latin-1 é in another key: read leniently it became U+FFFD in the rewritten file and in the backup.
  const bytes = Buffer.concat([Buffer.from(`{\n  "note": "caf`), Buffer.from([0xe9]), Buffer.from(`",\n  "mcpServers": {\n    "ev": ${server}\n  }\n}\n`)]);
  const latin1 = join(w.project, '.mcp.json');
  put(latin1, '');
  writeFileSync(latin1, bytes);
  const r = run(w, 'wrap', ['--host', 'claude-code']);
  assert.equal(r.status, 1, r.stderr);
  assert.ok(r.stderr.includes(`${latin1}:2:15: not valid UTF-8 (byte 0xe9)`), r.stderr);
  assert.deepEqual(readFileSync(latin1), bytes, 'every byte kept');
  assert.ok(!existsSync(join(w.gate, 'servers')) && !existsSync(join(w.gate, 'backups')), 'nothing drafted, nothing backed up');
  // The same file with the character itself (EF BF BD) is valid UTF-8: wrap would rewrite it.
  writeFileSync(latin1, bytes.toString('utf8'));
  const dry = run(w, 'wrap', ['--host', 'claude-code', '--dry-run']);
  assert.equal(dry.status, 0, dry.stderr);
  assert.match(dry.stdout, /^ {3}"note": "caf\ufffd",$/m);
});

test('a config that is a FIFO, a link to a device or a folder is named and left; the configs after it are still done', () => {
  const w = world();
  const fifo = join(w.project, '.vscode', 'mcp.json');
  mkdirSync(dirname(fifo));
  execFileSync('mkfifo', [fifo]); // opened to read, it waited for a writer that never came
  const device = put(join(w.home, '.cursor', 'mcp.json'), '');
  rmSync(device);
  symlinkSync('/dev/zero', device); // read to its end, it never ends
  const folder = join(w.project, '.cursor', 'mcp.json');
  mkdirSync(folder, { recursive: true });
  const ok = put(join(w.project, '.mcp.json'), `{\n  "mcpServers": {\n    "ev": { "command": ${J(process.execPath)}, "args": [${J(EVERYTHING)}, "stdio"] }\n  }\n}\n`);
  const r = spawnSync(process.execPath, [CLI, 'wrap', '--trust-project', '--host', 'vscode', '--host', 'cursor', '--host', 'claude-code', '--dry-run'], { cwd: w.project, env: w.env, encoding: 'utf8', timeout: 60_000 });
  assert.equal(r.status, 1, `${r.error ?? ''}\n${r.stderr}`);
  for (const p of [fifo, device, folder]) assert.ok(r.stderr.includes(`${p}: cannot be read (not a regular file); left as is`), r.stderr);
  assert.ok(r.stdout.startsWith(`--- ${ok}\n+++ ${ok} (wrapped)\n`), 'the config after them is done');
});

test('a JSONC config that starts with a byte order mark (VS Code, Cursor) is wrapped with the mark kept, and unwrapped byte for byte; a plain-JSON host\'s is named and left', () => {
  const w = world();
  const BOM = '\ufeff';
  const vscode = put(join(w.project, '.vscode', 'mcp.json'), `${BOM}{\n\t// the reference server\n\t"servers": {\n\t\t"everything": { "type": "stdio", "command": ${J(process.execPath)}, "args": [${J(EVERYTHING)}, "stdio"] }\n\t}\n}\n`);
  const desktop = put(join(w.home, '.config', 'Claude', 'claude_desktop_config.json'), `${BOM}{\n  "mcpServers": {\n    "everything": { "command": ${J(process.execPath)}, "args": [${J(EVERYTHING)}, "stdio"] }\n  }\n}\n`);
  const before = readFileSync(vscode);
  const desktopBefore = readFileSync(desktop);
  const r = run(w, 'wrap', ['--host', 'vscode', '--host', 'claude-desktop']);
  assert.equal(r.status, 1, r.stderr);
  assert.ok(r.stderr.includes(`${desktop}:1:1: starts with a byte order mark, which the host's JSON reader refuses; left as is`), r.stderr);
  assert.deepEqual(readFileSync(desktop), desktopBefore);
  const wrapped = readFileSync(vscode, 'utf8');
  assert.ok(wrapped.startsWith(`${BOM}{\n\t// the reference server\n`), 'the mark and the comment kept');
  assert.match(wrapped, /"mcp-proxy",\s*"--server",\s*"everything"/);
  const u = run(w, 'unwrap', ['--host', 'vscode']);
  assert.equal(u.status, 0, u.stderr);
  assert.deepEqual(readFileSync(vscode), before, 'every byte restored');
});

test('a config that nests twenty thousand deep in a key of its own (valid JSON, the host reads it) is named and left byte for byte; the configs after it are still done', () => {
  const w = world();
  const server = `{ "command": ${J(process.execPath)}, "args": [${J(EVERYTHING)}, "stdio"] }`;
  const deep = put(join(w.project, '.mcp.json'), `{\n  "mcpServers": {\n    "ev": ${server}\n  },\n  "junk": ${'['.repeat(20_000)}${']'.repeat(20_000)}\n}\n`);
  JSON.parse(readFileSync(deep, 'utf8')); // what the host reads
  const cursor = put(join(w.project, '.cursor', 'mcp.json'), `{\n  "mcpServers": {\n    "ev": ${server}\n  }\n}\n`);
  const before = readFileSync(deep);
  const r = run(w, 'wrap', ['--host', 'claude-code', '--host', 'cursor', '--dry-run']);
  assert.equal(r.status, 1, r.stderr);
  assert.ok(r.stderr.includes(`${deep}: nests deeper than wrap can read; left as is`), r.stderr);
  assert.ok(r.stdout.includes(`${cursor} (wrapped)`), `the next config is still done: ${r.stdout}`);
  assert.deepEqual(readFileSync(deep), before, 'left byte for byte');
});

test('a config at a path longer than a file name may be (250 characters) is wrapped, its backup named within the limit, and unwrapped byte for byte', () => {
  const w = world();
  const deep = join(w.project, 'a'.repeat(120), 'b'.repeat(120));
  const config = put(join(deep, 'servers.json'), `{\n  "mcpServers": {\n    "ev": { "command": ${J(process.execPath)}, "args": [${J(EVERYTHING)}, "stdio"] }\n  }\n}\n`);
  const before = readFileSync(config);
  const r = run(w, 'wrap', ['--host', config, '--timeout', '60s']);
  assert.equal(r.status, 0, r.stderr);
  const backups = readdirSync(join(w.gate, 'backups'));
  assert.equal(backups.length, 1);
  assert.ok(Buffer.byteLength(backups[0]) <= 255 && /servers\.json-[0-9a-f]{16}\.\d{4}-/.test(backups[0]), backups[0]);
  assert.deepEqual(readFileSync(join(w.gate, 'backups', backups[0])), before, 'the backup holds the file as it was');
  assert.equal(run(w, 'unwrap', ['--host', config]).status, 0);
  assert.deepEqual(readFileSync(config), before);
});

test('a config whose own name is 240 characters (a temporary name beside it would pass 255 bytes) is wrapped and unwrapped byte for byte, nothing left beside it', () => {
  const w = world();
  const config = put(join(w.project, `${'c'.repeat(235)}.json`), `{\n  "mcpServers": {\n    "ev": { "command": ${J(process.execPath)}, "args": [${J(EVERYTHING)}, "stdio"] }\n  }\n}\n`);
  const before = readFileSync(config);
  const r = run(w, 'wrap', ['--host', config, '--timeout', '60s']);
  assert.equal(r.status, 0, r.stderr);
  assert.ok(readFileSync(config, 'utf8').includes('mcp-proxy'), 'wrapped');
  const u = run(w, 'unwrap', ['--host', config]);
  assert.equal(u.status, 0, u.stderr);
  assert.deepEqual(readFileSync(config), before);
  assert.deepEqual(readdirSync(w.project), [basename(config)], 'no temporary copy left beside it');
});

test('an entry shaped like a gate entry that does not start this cloakpipe (a project config from elsewhere) is not taken for wrapped: named, exit 1; one wrapped by hand with this cloakpipe still is', () => {
  const w = world();
  const gateArgs = (server: string) => ['mcp-proxy', '--server', server, '--mode', 'shadow', '--', 'node', 'server.js'];
  const entries = {
    // sh runs its script; "mcp-proxy" and what follows are only its $0 and arguments.
    shell: { command: 'sh', args: ['-c', 'echo ran', ...gateArgs('shell')] },
    // node runs a script of the project's own, not cloakpipe's main.js.
    script: { command: process.execPath, args: ['./tools/cli/main.js', ...gateArgs('script')] },
    // cloakpipe's main.js, but node loads the project's code first.
    preload: { command: process.execPath, args: ['--require', './evil.js', CLI, ...gateArgs('preload')] },
    // The same through its environment.
    envpreload: { command: process.execPath, args: [CLI, ...gateArgs('envpreload')], env: { NODE_OPTIONS: '--require ./evil.js' } },
    // This home's gate as wrap would set it up (its --home: the home is not the default one).
    handmade: { command: process.execPath, args: [CLI, ...gateArgs('handmade').slice(0, 5), '--home', w.gate, ...gateArgs('handmade').slice(5)] },
  };
  const config = put(join(w.project, '.mcp.json'), JSON.stringify({ mcpServers: entries }, null, 2) + '\n');
  serverHeld(w, 'handmade');
  const before = readFileSync(config);
  const r = run(w, 'wrap', ['--host', config, '--dry-run']);
  assert.equal(r.status, 1, r.stderr);
  for (const name of ['shell', 'script', 'preload', 'envpreload'])
    assert.ok(r.stderr.includes(`"${name}": left as is: it names the gate (servers/${name}) but does not start this cloakpipe`), r.stderr);
  assert.ok(r.stderr.includes('"handmade": already wrapped (servers/handmade, shadow mode)'), r.stderr);
  assert.deepEqual(readFileSync(config), before);
});
