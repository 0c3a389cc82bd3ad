// The upstream's start: one that cannot be started is exit 2 with its reason (product.md 7a),
// and a started one gets the host-given environment minus the gate's own CLOAKPIPE_*.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { EVERYTHING, PERMIT_ALL, cloakpipe, makeHome, tempDir, writeFiles } from '../helpers/cli.js';
import { startGate } from '../helpers/gate.js';

const EMPTY_MANIFEST = 'version: 1\nrelease: start-test@1\ntools: {}\n';

function gate(home: string, upstream: string[]) {
  const f = writeFiles({ 'm.yaml': EMPTY_MANIFEST, 'p.cedar': PERMIT_ALL });
  return cloakpipe(['mcp-proxy', '--home', home, '--manifest', f['m.yaml'], '--policy', f['p.cedar'], '--', ...upstream], { input: '' });
}

test('an upstream command that does not exist is exit 2, named, with its reason', () => {
  const r = gate(makeHome(), ['cloakpipe-no-such-server-8d1f', '--flag']);
  assert.equal(r.status, 2, r.stderr);
  assert.match(r.stderr, /cannot start the upstream "cloakpipe-no-such-server-8d1f": command not found/);
  assert.equal(r.stdout, '', 'stdout carries only protocol frames');
});

test('an upstream file that is not executable is exit 2 with "not executable"', () => {
  const dir = tempDir();
  const script = join(dir, 'server.sh');
  writeFileSync(script, '#!/bin/sh\nexec cat\n');
  chmodSync(script, 0o644);
  const r = gate(makeHome(), [script]);
  assert.equal(r.status, 2, r.stderr);
  assert.match(r.stderr, /cannot start the upstream ".*server\.sh": not executable/);
});

test('an upstream path that is a directory is exit 2 and named', () => {
  const dir = join(tempDir(), 'a-directory');
  mkdirSync(dir);
  const r = gate(makeHome(), [dir]);
  assert.equal(r.status, 2, r.stderr);
  assert.match(r.stderr, /cannot start the upstream ".*a-directory": /);
});

test('an upstream that starts and then fails is not reported as one that could not start', () => {
  const r = gate(makeHome(), [process.execPath, '-e', 'process.exit(3)']);
  assert.notEqual(r.status, 2, r.stderr);
  assert.doesNotMatch(r.stderr, /cannot start/);
});

test("the upstream gets the host's environment without the gate's own CLOAKPIPE_* variables", async () => {
  const home = makeHome();
  const f = writeFiles({
    'm.yaml': 'version: 1\nrelease: env-test@1\ntools:\n  get-env:\n    effect: read\n    arguments: {}\n',
    'p.cedar': PERMIT_ALL,
  });
  const gated = await startGate({
    home,
    manifest: f['m.yaml'],
    policy: f['p.cedar'],
    upstream: [process.execPath, EVERYTHING, 'stdio'],
    env: { CLOAKPIPE_HOME: home, CLOAKPIPE_TEST_TOKEN: 'not-for-the-server', cloakpipe_lower: 'x', HOST_GIVEN_SETTING: 'kept' },
  });
  try {
    const res = (await gated.client.callTool({ name: 'get-env', arguments: {} })) as { content: { type: string; text: string }[] };
    const env = JSON.parse(res.content[0].text) as Record<string, string>;
    assert.equal(env.HOST_GIVEN_SETTING, 'kept');
    assert.equal(env.PATH, process.env.PATH);
    assert.deepEqual(Object.keys(env).filter((k) => k.toUpperCase().startsWith('CLOAKPIPE_')), []);
  } finally {
    await gated.close();
  }
});
