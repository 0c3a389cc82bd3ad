// The confined session's upstream: a real MCP server (server-everything) through the SDK client.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { McpUpstream } from '../../src/confine/upstream-client.js';
import { EVERYTHING } from '../helpers/cli.js';

test('the upstream gets the environment minus the gate\'s own CLOAKPIPE_* variables', async () => {
  const up = await McpUpstream.connect(process.execPath, [EVERYTHING, 'stdio'], {
    env: { ...(process.env as Record<string, string>), CLOAKPIPE_HOME: '/secret/home', CLOAKPIPE_DOCKER_SOCKET: '/secret.sock', CONFINE_VISIBLE: 'yes' },
    callTimeoutMs: 20_000,
  });
  try {
    const r = (await up.call('get-env', {})) as { result: { content: { text: string }[] } };
    const env = JSON.parse(r.result.content[0].text);
    assert.equal(env.CONFINE_VISIBLE, 'yes');
    assert.deepEqual(Object.keys(env).filter((k) => k.startsWith('CLOAKPIPE_')), []);
  } finally {
    await up.close();
  }
});
