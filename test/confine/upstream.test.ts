// The confined session's upstream goes through the one relay every door uses (confine/upstream.ts):
// the server's tool list reaches the gate's pins at start, so a tool whose definition changed is
// refused inside confinement as it is under mcp-proxy; the server's environment is the gate's
// minus CLOAKPIPE_*. Real servers (server-everything, the suite's recording upstream), a real gate.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConfineUpstream } from '../../src/confine/upstream.js';
import { cloakpipe, EVERYTHING, makeHome, tempDir } from '../helpers/cli.js';
import { readRecord } from '../helpers/gate.js';
import { ALIASES, confineUpstream, freshConfineGate, MANIFEST } from './fixtures/session.js';

async function session(home: string, manifest: string, u: { command: string; args: string[]; env: NodeJS.ProcessEnv }) {
  const { gate } = await freshConfineGate({ home, manifest, approvedTools: [...ALIASES.values(), 'get-env'] });
  const upstream = await ConfineUpstream.connect(u.command, u.args, { gate: gate.relayGate, env: u.env });
  return {
    upstream,
    close: async () => {
      await upstream.close();
      await gate.close('test');
    },
  };
}

const ledger = (home: string) => cloakpipe(['ledger', 'show', '--json', '--home', home]).stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l));

test('a tool whose definition changed since it was pinned is refused inside confinement, and never reaches the server', async () => {
  const home = makeHome();
  const dir = tempDir();
  const record = join(dir, 'record.jsonl');
  const first = await session(home, MANIFEST, confineUpstream(record));
  try {
    assert.deepEqual(await first.upstream.call('send_update', { message: 'hello' }), { kind: 'allowed', result: { content: [{ type: 'text', text: 'ok' }] } });
  } finally {
    await first.close();
  }
  assert.deepEqual(ledger(home).filter((e) => e.kind === 'pins').map((e) => [e.action, e.tool]), [['pinned', 'send_update'], ['pinned', 'post_public']]);

  // The same release, a server that now says send_update does something else.
  const descriptions = join(dir, 'descriptions.json');
  writeFileSync(descriptions, JSON.stringify({ send_update: 'send an update, and copy it to everyone' }));
  const second = await session(home, MANIFEST, confineUpstream(record, { DESCRIPTIONS_FILE: descriptions }));
  try {
    assert.deepEqual(await second.upstream.call('send_update', { message: 'again' }), { kind: 'refused', reason: 'tool_definition_changed' });
  } finally {
    await second.close();
  }
  assert.deepEqual(readRecord(record).map((r) => r.arguments), [{ message: 'hello' }], 'only the call made before the change reached the server');
  const entries = ledger(home);
  assert.ok(entries.some((e) => e.kind === 'pins' && e.action === 'changed' && e.tool === 'send_update'), 'the change is recorded');
  assert.equal(entries.filter((e) => e.kind === 'decision').at(-1).reason, 'tool_definition_changed');
  assert.equal(cloakpipe(['verify', '--home', home]).status, 0);
});

test("the upstream gets the environment minus the gate's own CLOAKPIPE_* variables", async () => {
  const manifest = `version: 1\nrelease: confine-env@1\nlabels: [public, confidential]\ntools:\n  get-env: { effect: read, accepts: confidential, arguments: {} }\n`;
  const s = await session(makeHome(), manifest, {
    command: process.execPath,
    args: [EVERYTHING, 'stdio'],
    env: { ...process.env, CLOAKPIPE_HOME: '/secret/home', CLOAKPIPE_DOCKER_SOCKET: '/secret.sock', CONFINE_VISIBLE: 'yes' },
  });
  try {
    const r = await s.upstream.call('get-env', {});
    assert.equal(r.kind, 'allowed', JSON.stringify(r));
    const env = JSON.parse((r as unknown as { result: { content: { text: string }[] } }).result.content[0].text);
    assert.equal(env.CONFINE_VISIBLE, 'yes');
    assert.deepEqual(Object.keys(env).filter((k) => k.startsWith('CLOAKPIPE_')), []);
  } finally {
    await s.close();
  }
});
