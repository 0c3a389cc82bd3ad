// `cloakpipe wrap` / `unwrap` with --server, --mode and --host FILE, on real host config files
// and the real binary: a --server that names no server is an error naming the name and the
// configs searched, with nothing written; --mode switches an entry already wrapped (in place,
// one value, atomically, backed up) and without --mode an entry keeps its mode; an entry that is
// not the one wrap wrote is not switched; the backups are 0600 in a 0700 folder; no `env` value
// is ever printed, not even in a dry run's diff (ADR 057). An entry an older cloakpipe wrapped is
// named with what its gate's start lacks, and unwrap and wrap move it (ADR 067).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { parse as parseJsonc } from 'jsonc-parser';
import { CLI, EVERYTHING } from '../helpers/cli.js';
import { GATE_NODE_FLAGS } from '../../src/cli/node-flags.js';
import { put, serverHeld, trusted, type World, world } from './host-world.js';

const CANARY = 'CANARY-env-secret-4c2a';
const J = JSON.stringify;

/** The real CLI; no run ever prints an env value. */
function run(w: World, cmd: 'wrap' | 'unwrap', args: string[] = []) {
  const r = spawnSync(process.execPath, [CLI, ...trusted([cmd, ...args])], { cwd: w.project, env: w.env, encoding: 'utf8', timeout: 120_000 });
  assert.ok(!r.stdout.includes(CANARY) && !r.stderr.includes(CANARY), `${cmd} ${args.join(' ')} printed an env value:\n${r.stdout}${r.stderr}`);
  return r;
}

type Entry = { command: string; args: string[]; env?: Record<string, string> };
const entryOf = (path: string, key: string, name: string): Entry => (parseJsonc(readFileSync(path, 'utf8')) as Record<string, Record<string, Entry>>)[key][name];

const mode = (path: string) => statSync(path).mode & 0o777;
const backups = (w: World) => (existsSync(join(w.gate, 'backups')) ? readdirSync(join(w.gate, 'backups')).sort().map((f) => join(w.gate, 'backups', f)) : []);

/** The entry started exactly as the host starts it (its mode as it is). */
async function startAsHost(e: Entry): Promise<Client> {
  const client = new Client({ name: 'host', version: '1' });
  await client.connect(new StdioClientTransport({ command: e.command, args: e.args, env: e.env, stderr: 'ignore' }));
  return client;
}
const text = (r: unknown) => ((r as { content: { type: string; text?: string }[] }).content.find((c) => c.type === 'text')?.text ?? '');
/** An argument the drafted manifest does not declare: forwarded in shadow mode, refused in enforce. */
const sneaky = (c: Client) => c.callTool({ name: 'echo', arguments: { message: 'hi', sneaky: 1 } });
const refused = (e: unknown) => e instanceof McpError && typeof (e.data as { reason?: unknown } | undefined)?.reason === 'string';

test('--server that names no server: exit 2 naming it and the configs searched, nothing written (wrap, unwrap, --host FILE); --server and --host FILE wrap and unwrap only what they name', () => {
  const w = world();
  const cursor = put(join(w.home, '.cursor', 'mcp.json'), `{\n  "mcpServers": {\n    "everything": { "command": "node", "args": [${J(EVERYTHING)}, "stdio"], "env": { "TOKEN": ${J(CANARY)} } }\n  }\n}\n`);
  const mcp = put(join(w.project, '.mcp.json'), `{\n  "mcpServers": {\n    "memory": {\n      "command": "node",\n      "args": ["memory.js"]\n    }\n  }\n}\n`);
  const file = put(join(w.project, 'servers.json'), `{\n  "mcpServers": {\n    "everything": {\n      "command": ${J(process.execPath)},\n      "args": [${J(EVERYTHING)}, "stdio"],\n      "env": { "TOKEN": ${J(CANARY)} }\n    }\n  }\n}\n`);
  const before = new Map([cursor, mcp, file].map((p) => [p, readFileSync(p, 'utf8')]));
  const unchanged = (why: string) => {
    for (const [p, t] of before) assert.equal(readFileSync(p, 'utf8'), t, `${why}: ${p} unchanged`);
  };

  for (const cmd of ['wrap', 'unwrap'] as const) {
    const r = run(w, cmd, ['--server', 'evrything']);
    assert.equal(r.status, 2, r.stderr);
    assert.equal(r.stderr, `cloakpipe ${cmd}: --server "evrything": no server of that name in ${mcp}, ${cursor} (did you mean "everything"?)\ncloakpipe ${cmd}: nothing changed\n`);
    assert.equal(r.stdout, '');
  }
  // One name that exists and one that does not: nothing at all is done, the one that exists included.
  const both = run(w, 'wrap', ['--server', 'everything', '--server', 'nope', '--mode', 'enforce']);
  assert.equal(both.status, 2, both.stderr);
  assert.match(both.stderr, /--server "nope": no server of that name in /);
  unchanged('a --server that names nothing');
  assert.ok(!existsSync(join(w.gate, 'servers')) && !existsSync(join(w.gate, 'backups')), 'nothing written to the home');
  // --host FILE: only that file is searched (the other configs' "everything" is not in it).
  const inFile = run(w, 'wrap', ['--host', file, '--server', 'memory']);
  assert.equal(inFile.status, 2);
  assert.equal(inFile.stderr, `cloakpipe wrap: --server "memory": no server of that name in ${file}\ncloakpipe wrap: nothing changed\n`);
  unchanged('--host FILE');

  // The dry run's diff shows no env value (run() checks), on the lines it changes and around them.
  const dry = run(w, 'wrap', ['--host', file, '--dry-run']);
  assert.equal(dry.status, 0, dry.stderr);
  // Nor a server's args (dry-run-args.test.ts): "stdio" is one.
  assert.match(dry.stdout, /\n\+ {8}"<redacted>"\n\+ {6}\],\n {7}"env": \{ "TOKEN": "<redacted>" \}\n/);
  const dry2 = run(w, 'wrap', ['--host', 'cursor', '--dry-run']);
  assert.equal(dry2.status, 0, dry2.stderr);
  assert.match(dry2.stdout, /\n- {4}"everything": \{ "command": "node", "args": \[[^\n]+\], "env": \{ "TOKEN": "<redacted>" \} \}\n/);
  assert.match(dry2.stdout, /\n\+ {6}\], "env": \{ "TOKEN": "<redacted>" \} \}\n/);

  // --host FILE --server NAME wraps that entry of that file only.
  const r = run(w, 'wrap', ['--host', file, '--server', 'everything', '--timeout', '20s']);
  assert.equal(r.status, 0, r.stderr);
  const wrapped = readFileSync(file, 'utf8');
  assert.notEqual(wrapped, before.get(file));
  assert.deepEqual(entryOf(file, 'mcpServers', 'everything').env, { TOKEN: CANARY });
  assert.equal(readFileSync(cursor, 'utf8'), before.get(cursor), 'the same name in another config is not that file');
  assert.equal(readFileSync(mcp, 'utf8'), before.get(mcp));
  // The backup holds the config as it was (env secrets included): 0600, in a 0700 folder.
  const [b] = backups(w);
  assert.equal(backups(w).length, 1);
  assert.equal(readFileSync(b, 'utf8'), before.get(file));
  assert.equal(mode(b), 0o600, 'the backup is 0600');
  assert.equal(mode(join(w.gate, 'backups')), 0o700);
  assert.equal(mode(join(w.gate, 'servers', 'everything', 'wrapped.json')), 0o600);

  // unwrap: a typo is an error and the wrapped entry stays; a name that is not wrapped is said so.
  const typo = run(w, 'unwrap', ['--host', file, '--server', 'everythin']);
  assert.equal(typo.status, 2);
  assert.equal(typo.stderr, `cloakpipe unwrap: --server "everythin": no server of that name in ${file} (did you mean "everything"?)\ncloakpipe unwrap: nothing changed\n`);
  assert.equal(readFileSync(file, 'utf8'), wrapped);
  const notWrapped = run(w, 'unwrap', ['--server', 'memory']);
  assert.equal(notWrapped.status, 0, notWrapped.stderr);
  assert.equal(notWrapped.stderr, `cloakpipe unwrap: ${mcp}: "memory": not wrapped\n`);
  assert.equal(readFileSync(file, 'utf8'), wrapped);
  const u = run(w, 'unwrap', ['--host', file, '--server', 'everything']);
  assert.equal(u.status, 0, u.stderr);
  unchanged('unwrap --host FILE --server');
  const [, ub] = backups(w);
  assert.equal(readFileSync(ub, 'utf8'), wrapped, "unwrap's backup is the wrapped file");
  assert.equal(mode(ub), 0o600, "unwrap's backup is 0600");
});

test('--server with no config, or with a config that cannot be read: exit 2, named', () => {
  const w = world();
  const none = run(w, 'wrap', ['--server', 'a']);
  assert.equal(none.status, 2);
  assert.ok(none.stderr.startsWith(`cloakpipe wrap: --server "a": no server of that name in any config (none found; looked at ${join(w.home, '.config', 'Claude', 'claude_desktop_config.json')}, ${join(w.home, '.claude.json')}, ${join(w.project, '.mcp.json')}, `), none.stderr);
  const broken = put(join(w.home, '.codeium', 'windsurf', 'mcp_config.json'), `{\n  "mcpServers": { "a": { "command": "x", "env": { "K": ${J(CANARY)} } }, }\n}\n`);
  const text0 = readFileSync(broken, 'utf8');
  const column = text0.split('\n')[1].lastIndexOf('}') + 1;
  const r = run(w, 'wrap', ['--server', 'a']);
  assert.equal(r.status, 2);
  assert.equal(r.stderr, `cloakpipe wrap: --server "a": no server of that name in any config (none found; looked at ${[join(w.home, '.config', 'Claude', 'claude_desktop_config.json'), join(w.home, '.claude.json'), join(w.project, '.mcp.json'), join(w.home, '.cursor', 'mcp.json'), join(w.project, '.cursor', 'mcp.json'), join(w.home, '.config', 'Code', 'User', 'mcp.json'), join(w.project, '.vscode', 'mcp.json'), broken].join(', ')})\ncloakpipe wrap: not searched: ${broken}:2:${column}: not valid JSON (PropertyNameExpected)\ncloakpipe wrap: nothing changed\n`);
  assert.equal(readFileSync(broken, 'utf8'), text0);
});

test('--mode switches an entry already wrapped, one value in place, backed up; without --mode it keeps its mode; started as the host would, enforce refuses what shadow forwarded', async () => {
  const w = world();
  const path = put(
    join(w.project, '.mcp.json'),
    `{\n  "mcpServers": {\n    "everything": {\n      "type": "stdio",\n      "command": ${J(process.execPath)},\n      "args": [${J(EVERYTHING)}, "stdio"],\n      "env": { "TOKEN": ${J(CANARY)} }\n    },\n    "other": { "command": "node", "args": ["other.js"], "env": { "KEY": ${J(CANARY)} } }\n  }\n}\n`,
  );
  const before = readFileSync(path, 'utf8');
  const w1 = run(w, 'wrap', ['--server', 'everything', '--timeout', '20s']);
  assert.equal(w1.status, 0, w1.stderr);
  const shadow = readFileSync(path, 'utf8');
  assert.equal(shadow.split('"shadow"').length, 2, 'one "shadow" in the file: the mode');
  const enforce = shadow.replace('"shadow"', '"enforce"');
  assert.ok(shadow.includes(`\n    "other": { "command": "node", "args": ["other.js"], "env": { "KEY": ${J(CANARY)} } }\n`), 'the other entry as it was');

  let c = await startAsHost(entryOf(path, 'mcpServers', 'everything'));
  try {
    assert.equal(text(await sneaky(c)), 'Echo: hi', 'shadow mode forwards what enforce would refuse');
  } finally {
    await c.close();
  }

  // Without --mode: already wrapped, its mode said, nothing written.
  // ("other" does not start: --server keeps these runs to "everything".)
  const again = run(w, 'wrap', ['--server', 'everything']);
  assert.equal(again.status, 0, again.stderr);
  assert.equal(again.stderr, `cloakpipe wrap: ${path}: "everything": already wrapped (servers/everything, shadow mode)\n`);
  assert.equal(readFileSync(path, 'utf8'), shadow);

  // --dry-run shows the one line, writes nothing, prints no env value (run() checks).
  const dry = run(w, 'wrap', ['--server', 'everything', '--mode', 'enforce', '--dry-run']);
  assert.equal(dry.status, 0, dry.stderr);
  assert.match(dry.stdout, /\n-        "shadow",\n\+        "enforce",\n/);
  assert.equal(dry.stdout.split('\n').filter((l) => /^[-+][^-+]/.test(l)).length, 2, 'only the mode changes');
  assert.match(dry.stderr, /"everything": would switch from shadow to enforce mode \(servers\/everything\)/);
  assert.equal(readFileSync(path, 'utf8'), shadow);
  assert.equal(backups(w).length, 1);

  const sw = run(w, 'wrap', ['--server', 'everything', '--mode', 'enforce']);
  assert.equal(sw.status, 0, sw.stderr);
  assert.match(sw.stderr, new RegExp(`${path.replace(/[.]/g, '\\.')}: "everything": switched from shadow to enforce mode \\(servers/everything\\)\\n`));
  assert.match(sw.stderr, /: switched 1 to enforce mode; the previous file is /);
  assert.equal(readFileSync(path, 'utf8'), enforce, 'byte for byte: the one value switched');
  const record = JSON.parse(readFileSync(join(w.gate, 'servers', 'everything', 'wrapped.json'), 'utf8')) as { entries: Record<string, { wrapped: Entry }> };
  assert.deepEqual(Object.values(record.entries)[0].wrapped, entryOf(path, 'mcpServers', 'everything'), 'the record says what the entry is now');
  assert.equal(mode(join(w.gate, 'servers', 'everything', 'wrapped.json')), 0o600);
  const bs = backups(w);
  assert.equal(bs.length, 2);
  assert.equal(readFileSync(bs[1], 'utf8'), shadow, 'the file before the switch is backed up');
  assert.equal(mode(bs[1]), 0o600);

  c = await startAsHost(entryOf(path, 'mcpServers', 'everything'));
  try {
    assert.equal(text(await c.callTool({ name: 'echo', arguments: { message: 'allowed' } })), 'Echo: allowed');
    await assert.rejects(sneaky(c), refused, 'enforced now');
  } finally {
    await c.close();
  }

  // Idempotent; and a wrap without --mode never takes enforce back to shadow.
  for (const args of [['--mode', 'enforce'], []]) {
    const r = run(w, 'wrap', ['--server', 'everything', ...args]);
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stderr, /"everything": already wrapped \(servers\/everything, enforce mode\)\n/);
    assert.equal(readFileSync(path, 'utf8'), enforce);
  }
  assert.equal(backups(w).length, 2, 'nothing written');

  // Asked for, back to shadow; unwrap restores every byte.
  const back = run(w, 'wrap', ['--server', 'everything', '--mode', 'shadow']);
  assert.equal(back.status, 0, back.stderr);
  assert.match(back.stderr, /"everything": switched from enforce to shadow mode/);
  assert.equal(readFileSync(path, 'utf8'), shadow);
  const u = run(w, 'unwrap');
  assert.equal(u.status, 0, u.stderr);
  assert.equal(readFileSync(path, 'utf8'), before);
  for (const b of backups(w)) assert.equal(mode(b), 0o600, `${b} is 0600`);
});

test('--mode does not switch an entry that is not the one wrap wrote; an entry that differs from its record only in its mode (switched by hand, or a crash between the record and the config) still unwraps and switches', () => {
  const w = world();
  const path = put(join(w.project, '.vscode', 'mcp.json'), `{\n\t"servers": {\n\t\t"everything": { "command": "node", "args": [${J(EVERYTHING)}, "stdio"], "env": { "TOKEN": ${J(CANARY)} } }\n\t}\n}\n`);
  const before = readFileSync(path, 'utf8');
  const recordPath = join(w.gate, 'servers', 'everything', 'wrapped.json');
  assert.equal(run(w, 'wrap', ['--timeout', '20s']).status, 0);
  const shadow = readFileSync(path, 'utf8');
  const record = readFileSync(recordPath, 'utf8');

  // Changed by hand since it was wrapped (its env): left, named, exit 1, nothing written.
  const edited = shadow.replace(J(CANARY), J(`${CANARY}-rotated`));
  writeFileSync(path, edited);
  let r = run(w, 'wrap', ['--mode', 'enforce']);
  assert.equal(r.status, 1, r.stderr);
  assert.equal(r.stderr, `cloakpipe wrap: ${path}: "everything": left in shadow mode, not switched to enforce: the entry changed since it was wrapped; restore it from the backup in ${join(w.gate, 'backups')} and wrap it again, or set its --mode by hand\n`);
  assert.equal(readFileSync(path, 'utf8'), edited);
  assert.equal(backups(w).length, 1);
  writeFileSync(path, shadow);

  // No record of how it was wrapped (another home, or by hand): left, named, exit 1.
  rmSync(recordPath);
  r = run(w, 'wrap', ['--mode', 'enforce']);
  assert.equal(r.status, 1, r.stderr);
  assert.equal(r.stderr, `cloakpipe wrap: ${path}: "everything": left in shadow mode, not switched to enforce: ${recordPath} has no record of how it was wrapped (by hand, or with another --home?); set its --mode by hand\n`);
  assert.equal(readFileSync(path, 'utf8'), shadow);

  // A record that is not JSON is named, never quoted: V8's parse message quotes the text near
  // the fault, and a record holds the entries' env values (run() fails on output with the canary).
  writeFileSync(recordPath, `${CANARY} ${record}`);
  r = run(w, 'wrap', ['--mode', 'enforce']);
  assert.equal(r.status, 1, r.stderr);
  assert.match(r.stderr, /wrapped\.json is not valid JSON/);
  r = run(w, 'unwrap');
  assert.notEqual(r.status, 0, r.stderr);
  assert.match(r.stderr, /wrapped\.json is not valid JSON/);
  assert.equal(readFileSync(path, 'utf8'), shadow);
  writeFileSync(recordPath, record);

  // Switched by hand in the config (or a crash after the config, before the record): unwrap restores.
  writeFileSync(path, shadow.replace('"shadow"', '"enforce"'));
  r = run(w, 'unwrap');
  assert.equal(r.status, 0, r.stderr);
  assert.equal(readFileSync(path, 'utf8'), before);

  // The record written for enforce, the config not (a crash between them): switches, and unwraps.
  assert.equal(run(w, 'wrap').status, 0);
  assert.equal(readFileSync(path, 'utf8'), shadow);
  const rec = JSON.parse(readFileSync(recordPath, 'utf8')) as { entries: Record<string, { wrapped: Entry }> };
  const e = Object.values(rec.entries)[0].wrapped;
  e.args[e.args.indexOf('--mode') + 1] = 'enforce';
  writeFileSync(recordPath, JSON.stringify(rec, null, 2) + '\n');
  r = run(w, 'wrap', ['--mode', 'enforce']);
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stderr, /"everything": switched from shadow to enforce mode/);
  assert.equal(readFileSync(path, 'utf8'), shadow.replace('"shadow"', '"enforce"'));
  r = run(w, 'unwrap', ['--server', 'everything']);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(readFileSync(path, 'utf8'), before);
});

test('an entry an older cloakpipe wrapped, without the Node options: wrap and --mode say what its start lacks and how to move it, write nothing else; unwrap and wrap again start it as this cloakpipe does; an entry wrapped by hand gets no such note', () => {
  const w = world();
  const path = put(
    join(w.project, '.mcp.json'),
    `{\n  "mcpServers": {\n    "everything": {\n      "command": ${J(process.execPath)},\n      "args": [${J(EVERYTHING)}, "stdio"],\n      "env": { "TOKEN": ${J(CANARY)} }\n    },\n    "handmade": { "command": ${J(process.execPath)}, "args": [${J(CLI)}, "mcp-proxy", "--server", "handmade", "--mode", "shadow", "--home", ${J(w.gate)}, "--", "node", "server.js"] }\n  }\n}\n`,
  );
  const before = readFileSync(path, 'utf8');
  let r = run(w, 'wrap', ['--server', 'everything', '--timeout', '20s']);
  assert.equal(r.status, 0, r.stderr);
  const current = readFileSync(path, 'utf8');
  assert.deepEqual(entryOf(path, 'mcpServers', 'everything').args.slice(0, GATE_NODE_FLAGS.length), [...GATE_NODE_FLAGS]);

  // What a cloakpipe before ADR 067 wrote: the same entry without the Node options, in the config
  // and in the record it keeps of what it wrote.
  let older = current;
  for (const f of GATE_NODE_FLAGS) older = older.replace(new RegExp(`\\n *${J(f)},`), '');
  assert.notEqual(older, current);
  writeFileSync(path, older);
  const recordPath = join(w.gate, 'servers', 'everything', 'wrapped.json');
  const rec = JSON.parse(readFileSync(recordPath, 'utf8')) as { entries: Record<string, { wrapped: Entry }> };
  const wrapped = Object.values(rec.entries)[0].wrapped;
  wrapped.args = wrapped.args.filter((a) => !GATE_NODE_FLAGS.includes(a));
  assert.deepEqual(wrapped, entryOf(path, 'mcpServers', 'everything'), 'the record holds the older entry');
  writeFileSync(recordPath, JSON.stringify(rec, null, 2) + '\n');

  const lacks = `its gate starts with other Node options (this cloakpipe writes ${GATE_NODE_FLAGS.join(' ')}): unwrap it and wrap it again to start it as this cloakpipe does`;
  r = run(w, 'wrap', ['--server', 'everything']);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stderr, `cloakpipe wrap: ${path}: "everything": already wrapped (servers/everything, shadow mode); ${lacks}\n`);
  assert.equal(readFileSync(path, 'utf8'), older, 'nothing written');

  // A mode switch changes the mode only, and says the same.
  r = run(w, 'wrap', ['--server', 'everything', '--mode', 'enforce']);
  assert.equal(r.status, 0, r.stderr);
  assert.ok(r.stderr.includes(`: "everything": switched from shadow to enforce mode (servers/everything); ${lacks}\n`), r.stderr);
  assert.equal(readFileSync(path, 'utf8'), older.replace('"shadow"', '"enforce"'));

  // Moved as the note says; wrap then writes this cloakpipe's start, and has nothing more to say.
  r = run(w, 'unwrap', ['--server', 'everything']);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(readFileSync(path, 'utf8'), before, 'unwrap restores every byte');
  r = run(w, 'wrap', ['--server', 'everything', '--mode', 'enforce', '--timeout', '20s']);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(readFileSync(path, 'utf8'), current.replace('"shadow"', '"enforce"'));
  r = run(w, 'wrap', ['--server', 'everything']);
  assert.equal(r.stderr, `cloakpipe wrap: ${path}: "everything": already wrapped (servers/everything, enforce mode)\n`);

  // Wrapped by hand (no record of it): wrap cannot unwrap it, so it does not tell to.
  serverHeld(w, 'handmade');
  r = run(w, 'wrap', ['--server', 'handmade']);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stderr, `cloakpipe wrap: ${path}: "handmade": already wrapped (servers/handmade, shadow mode)\n`);
});
