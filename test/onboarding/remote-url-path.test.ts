// A remote server's URL whose path or query holds a key (`https://x/mcp/sk-…`, `?key=…`), through
// the real binary against server-everything over Streamable HTTP: the drafted manifest, the
// errors and the dry run's diff name scheme, host and port only.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CLI, cloakpipe, tempDir } from '../helpers/cli.js';
import { startEverythingHttp } from '../helpers/everything-http.js';
import { put, world } from './host-world.js';

const KEY = 'sk-CANARY-9d41e7';

test("a URL's path and query are elided from the draft's header, from errors and from the dry run's diff", async () => {
  const server = await startEverythingHttp();
  try {
    const origin = new URL(server.url).origin;
    const dir = tempDir('cloakpipe-draft-url-');
    const out = join(dir, 'm.yaml');
    const d = cloakpipe(['manifest', 'draft', '--out', out, '--upstream-url', `${server.url}?key=${KEY}`], { timeout: 60_000 });
    assert.equal(d.status, 0, d.stderr);
    const manifest = readFileSync(out, 'utf8');
    assert.ok(manifest.startsWith(`# Drafted by \`cloakpipe manifest draft\` from the tools/list of: ${origin} (path elided: it may hold a key)\n`), manifest.slice(0, 200));
    assert.ok(!manifest.includes('/mcp') && !manifest.includes(KEY) && !d.stderr.includes(KEY));
    // A key in the path: server-everything answers 404 and its page quotes the path.
    const bad = cloakpipe(['manifest', 'draft', '--upstream-url', `${origin}/mcp/${KEY}`], { timeout: 60_000 });
    assert.equal(bad.status, 2, bad.stderr);
    assert.ok(bad.stderr.includes(`cannot reach the server "${origin}" (path elided: it may hold a key)`), bad.stderr);
    assert.ok(!bad.stderr.includes(KEY) && !bad.stdout.includes(KEY), bad.stderr);
    // wrap --dry-run of such an entry, and of one with the key in the query.
    const w = world('cloakpipe-wrap-url-');
    put(join(w.project, '.mcp.json'), JSON.stringify({ mcpServers: { keyed: { type: 'http', url: `${origin}/mcp/${KEY}` }, queried: { type: 'http', url: `${server.url}?key=${KEY}` } } }, null, 2));
    const dry = spawnSync(process.execPath, [CLI, 'wrap', '--trust-project', '--host', 'claude-code', '--dry-run'], { cwd: w.project, env: w.env, encoding: 'utf8', timeout: 60_000 });
    assert.equal(dry.status, 0, dry.stderr);
    assert.match(dry.stdout, /"--upstream-url",\n\+\s+"<redacted>"/);
    assert.ok(!dry.stdout.includes(KEY) && !dry.stderr.includes(KEY), dry.stdout);
  } finally {
    await server.stop();
  }
});

test("the dry run's diff shows no remote entry's credentials, path or query, also of an entry it leaves as is (the context around a wrapped one)", () => {
  const w = world();
  const secrets = ['pw-URLSECRET', 'sk-PATHSECRET', 'sk-QSECRET', 'sk-BAREPW'];
  const config = put(
    join(w.project, '.mcp.json'),
    `{\n  "mcpServers": {\n    "local": { "command": ${JSON.stringify(process.execPath)}, "args": ["server.js"] },\n` +
      `    "creds": { "url": "https://user:pw-URLSECRET@example.com/mcp/sk-PATHSECRET?key=sk-QSECRET" },\n` +
      `    "bare": { "type": "http", "url": "https://me:sk-BAREPW@example.org" },\n` +
      `    "plain": { "url": "https://plain.example.net" }\n  }\n}\n`,
  );
  const r = spawnSync(process.execPath, [CLI, 'wrap', '--trust-project', '--host', config, '--dry-run'], { cwd: w.project, env: w.env, encoding: 'utf8', timeout: 60_000 });
  assert.ok(r.stdout.includes('+++'), `a diff was shown: ${r.stdout}${r.stderr}`);
  for (const s of secrets) assert.ok(!r.stdout.includes(s) && !r.stderr.includes(s), `${s} shown:\n${r.stdout}${r.stderr}`);
  assert.ok(r.stdout.includes('"https://plain.example.net"'), 'a URL that is an origin alone is shown');
});
