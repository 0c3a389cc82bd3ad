// `cloakpipe confine` as a command: usage and configuration refusals (no Docker needed). The
// end-to-end run through the CLI is in docker.test.ts (Docker cases run sequentially).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { execFileSync, spawn } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { run } from '../../src/cli/confine.js';
import { UsageError } from '../../src/cli/args.js';
import { buildAliases, loadAliases, AliasError } from '../../src/confine/aliases.js';
import { MANIFEST } from './fixtures/session.js';
import { cloakpipe } from '../helpers/cli.js';

const dir = mkdtempSync(join(tmpdir(), 'cp-confine-cli-'));
const IMG = 'sha256:' + 'ab'.repeat(32);

const files = {
  manifest: join(dir, 'manifest.yaml'),
  policy: join(dir, 'policy.cedar'),
  context: join(dir, 'context.json'),
  aliases: join(dir, 'aliases.yaml'),
  input: join(dir, 'input.json'),
};
writeFileSync(files.manifest, MANIFEST);
writeFileSync(files.policy, 'permit (principal, action == Action::"call_tool", resource);\n');
writeFileSync(files.context, JSON.stringify({ task: { id: 'T-1' }, sensitivity: 'confidential' }));
writeFileSync(files.aliases, 'notify: send_update\npublish: post_public\n');
writeFileSync(files.input, '{}');

const base = (over: Record<string, string> = {}) => {
  const f = { image: IMG, aliases: files.aliases, manifest: files.manifest, policy: files.policy, context: files.context, input: files.input, ...over };
  return [...Object.entries(f).flatMap(([k, v]) => [`--${k}`, v]), '--', 'true'];
};

test('aliases: declared tools only, plain names only', () => {
  const tools = new Set(['send_update', 'post_public']);
  assert.deepEqual([...buildAliases({ notify: 'send_update' }, tools)], [['notify', 'send_update']]);
  assert.throws(() => buildAliases({ notify: 'delete_all' }, tools), AliasError);
  assert.throws(() => buildAliases({ notify: { tool: 'send_update' } }, tools), AliasError);
  assert.throws(() => buildAliases({ 'no tify': 'send_update' }, tools), AliasError);
  assert.throws(() => buildAliases([], tools), AliasError);
  assert.throws(() => buildAliases({}, tools), AliasError);
  const dup = join(dir, 'dup.yaml');
  writeFileSync(dup, 'notify: send_update\nnotify: post_public\n');
  assert.throws(() => loadAliases(dup, tools), AliasError);
  const json = join(dir, 'a.json');
  writeFileSync(json, '{"notify": "send_update"}');
  assert.equal(loadAliases(json, tools).get('notify'), 'send_update');
});

test('usage: tags, missing flags and a missing upstream are usage errors', async () => {
  await assert.rejects(run(base({ image: 'agent:latest' })), UsageError);
  await assert.rejects(run(base({ image: 'sha256:abc' })), UsageError);
  await assert.rejects(run(['--image', IMG, '--', 'true']), UsageError);
  await assert.rejects(run(base({ timeout: 'forever' })), UsageError);
  await assert.rejects(run(base().slice(0, -2)), UsageError);
});

test('configuration refusals exit 2 before any container exists', async () => {
  const badAliases = join(dir, 'bad-aliases.yaml');
  writeFileSync(badAliases, 'notify: drop_tables\n');
  assert.equal(await run(base({ aliases: badAliases })), 2);
  const unclassified = join(dir, 'ctx-nolabel.json');
  writeFileSync(unclassified, JSON.stringify({ task: { id: 'T-1' } }));
  assert.equal(await run(base({ context: unclassified })), 2);
  const big = join(dir, 'big.json');
  writeFileSync(big, JSON.stringify({ x: 'y'.repeat(70 * 1024) }));
  assert.equal(await run(base({ input: big })), 2);
  const arr = join(dir, 'arr.json');
  writeFileSync(arr, '[1]');
  assert.equal(await run(base({ input: arr })), 2);
});


test('--input that is not UTF-8 is refused, exit 2, not handed to the agent with U+FFFD in place of its bytes', () => {
  const bad = join(dir, 'not-utf8.json');
  writeFileSync(bad, Buffer.concat([Buffer.from('{"note": "caf'), Buffer.from([0xe9]), Buffer.from('"}')]));
  const r = cloakpipe(['confine', ...base({ input: bad })], { timeout: 20_000 });
  assert.equal(r.status, 2, r.stderr);
  assert.equal(r.stderr, 'cloakpipe confine: --input is not valid UTF-8\n');
});
test('--input and --aliases are regular files: a FIFO whose writer never closes is refused, not read until an EOF that never comes', async () => {
  for (const flag of ['input', 'aliases'] as const) {
    const fifo = join(dir, `${flag}.fifo`);
    execFileSync('mkfifo', [fifo]);
    // A writer that sends more than one frame and keeps the FIFO open.
    const writer = spawn('sh', ['-c', 'exec 3>"$1"; head -c 70000 /dev/zero | tr "\\0" x >&3; sleep 60', 'sh', fifo], { stdio: 'ignore' });
    try {
      const r = cloakpipe(['confine', ...base({ [flag]: fifo })], { timeout: 20_000 });
      assert.equal(r.status, 2, `refused at once (signal ${r.signal}): ${r.stderr}`);
      assert.match(r.stderr, /not a regular file/);
    } finally {
      writer.kill('SIGKILL');
    }
  }
});
